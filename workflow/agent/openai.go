package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	openai "github.com/sashabaranov/go-openai"
)

// OpenAIConfig points at an OpenAI-compatible server.
type OpenAIConfig struct {
	BaseURL string // e.g. http://localhost:11434/v1; "" is api.openai.com
	APIKey  string // "" is sent as "dummy" (local servers ignore it)
	Model   string // default gpt-4o-mini
	// HTTPClient, if set, is used for the requests (tests).
	HTTPClient *http.Client
}

// ModelDefault is used when OPENAI_MODEL is unset.
const ModelDefault = "gpt-4o-mini"

// openAIClient is the only user of go-openai in flightdeck.
type openAIClient struct {
	c     *openai.Client
	model string
}

// NewOpenAI returns a ChatClient for an OpenAI-compatible server.
func NewOpenAI(cfg OpenAIConfig) ChatClient {
	key := cfg.APIKey
	if key == "" {
		key = "dummy"
	}
	oc := openai.DefaultConfig(key)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	if cfg.HTTPClient != nil {
		oc.HTTPClient = cfg.HTTPClient
	}
	model := cfg.Model
	if model == "" {
		model = ModelDefault
	}
	return &openAIClient{c: openai.NewClientWithConfig(oc), model: model}
}

// Chat implements ChatClient, mapping errors to StatusError / ErrBadReply.
func (o *openAIClient) Chat(ctx context.Context, req ChatRequest) (ChatReply, error) {
	r := openai.ChatCompletionRequest{Model: o.model}
	for _, m := range req.Messages {
		om := openai.ChatCompletionMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name}
		for _, tc := range m.ToolCalls {
			om.ToolCalls = append(om.ToolCalls, openai.ToolCall{ID: tc.ID, Type: openai.ToolTypeFunction,
				Function: openai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		r.Messages = append(r.Messages, om)
	}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: json.RawMessage(t.Parameters)}})
	}
	resp, err := o.c.CreateChatCompletion(ctx, r)
	if err != nil {
		var apiErr *openai.APIError
		var reqErr *openai.RequestError
		switch {
		case errors.As(err, &apiErr):
			return ChatReply{}, &StatusError{Status: apiErr.HTTPStatusCode, Err: errors.New(apiErr.Message)}
		case errors.As(err, &reqErr):
			return ChatReply{}, &StatusError{Status: reqErr.HTTPStatusCode, Err: fmt.Errorf("%s", reqErr.HTTPStatus)}
		case ctx.Err() != nil:
			return ChatReply{}, fmt.Errorf("LLM request timed out or was cancelled: %w", ctx.Err())
		}
		var syn *json.SyntaxError
		var ute *json.UnmarshalTypeError
		if errors.As(err, &syn) || errors.As(err, &ute) {
			return ChatReply{}, fmt.Errorf("%w: %v", ErrBadReply, err)
		}
		return ChatReply{}, fmt.Errorf("LLM request failed: %w", err)
	}
	if len(resp.Choices) == 0 {
		return ChatReply{}, fmt.Errorf("%w: no choices", ErrBadReply)
	}
	ch := resp.Choices[0].Message
	out := Message{Role: ch.Role, Content: ch.Content}
	if out.Role == "" {
		out.Role = "assistant"
	}
	for _, tc := range ch.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return ChatReply{Message: out, Usage: Usage{PromptTokens: resp.Usage.PromptTokens,
		CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}}, nil
}
