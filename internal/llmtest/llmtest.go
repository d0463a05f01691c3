// Package llmtest is a fake OpenAI-compatible chat server for tests: real
// HTTP (clients talk to it through go-openai), scripted replies including
// tool calls, and fault injection (HTTP errors, 429, hangs until the
// client's timeout, garbage bodies, empty choices). It records every
// request so tests can assert what the model was shown.
package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Call is a scripted tool call.
type Call struct {
	ID   string
	Name string
	Args string // raw JSON text, sent as is (may be invalid on purpose)
}

// ToolCall builds a Call whose arguments are v marshalled to JSON.
func ToolCall(id, name string, v any) Call {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // test bug
	}
	return Call{ID: id, Name: name, Args: string(b)}
}

// Reply is one scripted answer.
type Reply struct {
	Content   string
	ToolCalls []Call
	Tokens    int // usage.total_tokens (default 10)

	// Faults.
	Status  int  // answer this HTTP status with an OpenAI error body
	Garbage bool // answer 200 with a body that is not JSON
	Empty   bool // answer 200 with no choices
	Hang    bool // never answer: wait until the client gives up
	// Block delays the answer until it is closed (or the client gives up).
	Block <-chan struct{}
}

// Message is a message as the server received it.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
	ToolCalls  []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// Request is a request as the server received it.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Raw string `json:"-"`
}

// ToolNames lists the tools offered in the request.
func (r Request) ToolNames() []string {
	var out []string
	for _, t := range r.Tools {
		out = append(out, t.Function.Name)
	}
	return out
}

// Last is the last message of the request.
func (r Request) Last() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

// Server is the fake.
type Server struct {
	// URL is the base URL to use as OPENAI_BASE_URL (ends in /v1).
	URL string

	mu       sync.Mutex
	script   []Reply
	fallback func(Request) Reply
	requests []Request
	arrived  chan int
}

// New starts a fake server, closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{arrived: make(chan int, 1000)}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	s.URL = ts.URL + "/v1"
	return s
}

// Push appends replies to the script; requests take them in order.
func (s *Server) Push(r ...Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, r...)
}

// Fallback answers requests once the script is used up (default: 500).
func (s *Server) Fallback(f func(Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fallback = f
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Arrived delivers the 1-based number of each request as it arrives.
func (s *Server) Arrived() <-chan int { return s.arrived }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req Request
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad request body")
		return
	}
	req.Raw = string(body)
	s.mu.Lock()
	s.requests = append(s.requests, req)
	n := len(s.requests)
	var rep Reply
	switch {
	case len(s.script) > 0:
		rep, s.script = s.script[0], s.script[1:]
	case s.fallback != nil:
		f := s.fallback
		s.mu.Unlock()
		rep = f(req)
		s.mu.Lock()
	default:
		rep = Reply{Status: http.StatusInternalServerError}
	}
	s.mu.Unlock()
	select {
	case s.arrived <- n:
	default:
	}
	if rep.Hang {
		<-r.Context().Done()
		return
	}
	if rep.Block != nil {
		select {
		case <-rep.Block:
		case <-r.Context().Done():
			return
		}
	}
	switch {
	case rep.Status != 0:
		writeError(w, rep.Status, fmt.Sprintf("injected %d", rep.Status))
		return
	case rep.Garbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices": [ this is not json`))
		return
	}
	type fn struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type tc struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function fn     `json:"function"`
	}
	msg := map[string]any{"role": "assistant", "content": rep.Content}
	finish := "stop"
	if len(rep.ToolCalls) > 0 {
		var calls []tc
		for i, c := range rep.ToolCalls {
			id := c.ID
			if id == "" {
				id = fmt.Sprintf("call_%d_%d", n, i)
			}
			calls = append(calls, tc{ID: id, Type: "function", Function: fn{Name: c.Name, Arguments: c.Args}})
		}
		msg["tool_calls"] = calls
		finish = "tool_calls"
	}
	choices := []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}}
	if rep.Empty {
		choices = []any{}
	}
	tokens := rep.Tokens
	if tokens == 0 {
		tokens = 10
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1, "model": req.Model,
		"choices": choices,
		"usage":   map[string]int{"prompt_tokens": tokens / 2, "completion_tokens": tokens - tokens/2, "total_tokens": tokens},
	})
}

func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "server_error"}})
}
