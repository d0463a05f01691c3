package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"flightdeck/internal/backoff"
	"flightdeck/internal/breaker"
)

// Message is one entry of the model's conversation.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is the model's request to run a tool; Arguments is the raw JSON
// text the model wrote (validated before anything runs).
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ToolDef describes a tool to the model.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage // JSON schema of the arguments object
}

// ChatRequest is one completion request.
type ChatRequest struct {
	Messages []Message
	Tools    []ToolDef
}

// Usage is the tokens a reply cost.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	TotalTokens      int
}

// ChatReply is the model's answer.
type ChatReply struct {
	Message Message
	Usage   Usage
}

// ChatClient talks to an OpenAI-compatible server (openai.go implements it).
type ChatClient interface {
	Chat(ctx context.Context, req ChatRequest) (ChatReply, error)
}

// StatusError is an HTTP error answer from the LLM server.
type StatusError struct {
	Status int
	Err    error
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("LLM server answered %d: %v", e.Status, e.Err)
}
func (e *StatusError) Unwrap() error { return e.Err }

// ErrBadReply: the server answered something that is not a usable
// completion (garbage, no choices). Retried like a server error.
var ErrBadReply = errors.New("unusable reply from the LLM server")

// ErrCircuitOpen: the LLM server failed too often lately; calls fail at
// once until the breaker lets a probe through.
var ErrCircuitOpen = errors.New("LLM circuit breaker open")

// retryable tells transient failures (429, 5xx, timeouts, garbage) from
// ones that retrying cannot fix (400, 401, 403, 404: configuration or
// request errors).
func retryable(err error) bool {
	var se *StatusError
	if errors.As(err, &se) {
		return se.Status == 429 || se.Status == 408 || se.Status >= 500
	}
	return true
}

// RetryConfig configures retries and the breaker around a ChatClient.
// Zero values mean the defaults.
type RetryConfig struct {
	Attempts       int           // tries per call, default 4
	BackoffBase    time.Duration // first backoff (then 2x… with jitter), default 1s
	BackoffMax     time.Duration // default 30s
	RequestTimeout time.Duration // per try, default 2m
	// BreakerThreshold consecutive failed calls open the breaker (default
	// 5) for BreakerCooldown (default 30s); then one probe decides.
	BreakerThreshold int
	BreakerCooldown  time.Duration

	now func() time.Time // the breaker's clock, for tests; default time.Now
}

// retryingClient retries transient failures with backoff and breaks the
// circuit when the server keeps failing, so many tasks do not hammer a
// server that is down.
type retryingClient struct {
	next    ChatClient
	cfg     RetryConfig
	breaker *breaker.Breaker
}

func newRetrying(next ChatClient, cfg RetryConfig) *retryingClient {
	if cfg.Attempts <= 0 {
		cfg.Attempts = 4
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = time.Second
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 30 * time.Second
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 2 * time.Minute
	}
	if cfg.BreakerThreshold <= 0 {
		cfg.BreakerThreshold = 5
	}
	if cfg.BreakerCooldown <= 0 {
		cfg.BreakerCooldown = 30 * time.Second
	}
	if cfg.now == nil {
		cfg.now = time.Now
	}
	return &retryingClient{next: next, cfg: cfg, breaker: breaker.New(breaker.Config{
		Failures: cfg.BreakerThreshold, OpenFor: cfg.BreakerCooldown, Successes: 1, Now: cfg.now})}
}

// callError is a failed call after its retries, with the attempts made.
type callError struct {
	attempts int
	err      error
}

func (e *callError) Error() string {
	return fmt.Sprintf("LLM call failed after %d attempt(s): %v", e.attempts, e.err)
}
func (e *callError) Unwrap() error { return e.err }

// Chat calls the server, retrying transient failures; onRetry (optional)
// hears about each retry.
func (c *retryingClient) Chat(ctx context.Context, req ChatRequest, onRetry func(attempt int, err error, wait time.Duration)) (ChatReply, error) {
	var last error
	for attempt := 1; attempt <= c.cfg.Attempts; attempt++ {
		call, refused := c.breaker.Allow()
		var err error
		if refused != nil {
			err = ErrCircuitOpen
		} else {
			var reply ChatReply
			tctx, cancel := context.WithTimeout(ctx, c.cfg.RequestTimeout)
			reply, err = c.next.Chat(tctx, req)
			cancel()
			if err == nil {
				err = validReply(reply)
			}
			if err == nil {
				call.Done(true)
				return reply, nil
			}
			if ctx.Err() != nil {
				// Our own task was interrupted: not the server's fault.
				call.Abandon()
				return ChatReply{}, context.Cause(ctx)
			}
			call.Done(false)
		}
		// An open breaker counts as a failed attempt without a request; the
		// retry waits for it to let a probe through.
		last = err
		if !retryable(err) || attempt == c.cfg.Attempts {
			return ChatReply{}, &callError{attempts: attempt, err: err}
		}
		wait := breaker.RetryWait(backoff.Exponential(c.cfg.BackoffBase, c.cfg.BackoffMax, attempt), refused, c.cfg.now())
		if onRetry != nil {
			onRetry(attempt, err, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ChatReply{}, context.Cause(ctx)
		case <-t.C:
		}
	}
	return ChatReply{}, &callError{attempts: c.cfg.Attempts, err: last}
}

func validReply(r ChatReply) error {
	m := r.Message
	if m.Role != "" && m.Role != "assistant" {
		return fmt.Errorf("%w: message role %q", ErrBadReply, m.Role)
	}
	return nil
}
