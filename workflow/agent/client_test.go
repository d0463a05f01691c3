package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// scripted is a ChatClient answering from a list of errors (nil: success).
type scripted struct {
	calls atomic.Int32
	errs  []error
}

func (s *scripted) Chat(ctx context.Context, req ChatRequest) (ChatReply, error) {
	n := int(s.calls.Add(1)) - 1
	if n < len(s.errs) && s.errs[n] != nil {
		return ChatReply{}, s.errs[n]
	}
	return ChatReply{Message: Message{Role: "assistant", Content: "ok"}}, nil
}

func TestRetryingClient(t *testing.T) {
	t.Parallel()
	boom := &StatusError{Status: 500, Err: errors.New("boom")}

	t.Run("BreakerOpensFailsFastAndClosesAfterAProbe", func(t *testing.T) {
		t.Parallel()
		s := &scripted{errs: []error{boom, boom, nil}}
		now := time.Now()
		c := newRetrying(s, RetryConfig{Attempts: 1, BreakerThreshold: 2, BreakerCooldown: time.Hour,
			now: func() time.Time { return now }})
		for range 2 {
			_, err := c.Chat(t.Context(), ChatRequest{}, nil)
			require.ErrorIs(t, err, boom)
		}
		_, err := c.Chat(t.Context(), ChatRequest{}, nil)
		require.ErrorIs(t, err, ErrCircuitOpen)
		require.EqualValues(t, 2, s.calls.Load(), "an open breaker sends nothing")

		now = now.Add(time.Hour) // cooldown over: half-open
		reply, err := c.Chat(t.Context(), ChatRequest{}, nil)
		require.NoError(t, err)
		require.Equal(t, "ok", reply.Message.Content)
		_, err = c.Chat(t.Context(), ChatRequest{}, nil)
		require.NoError(t, err, "a successful probe closes the breaker")
	})

	t.Run("RetryWaitsForTheBreakerToHalfOpen", func(t *testing.T) {
		t.Parallel()
		s := &scripted{errs: []error{boom, nil}}
		// The backoff (≥15ms) outlasts the cooldown (1ms): the retry is the probe.
		c := newRetrying(s, RetryConfig{Attempts: 3, BackoffBase: 20 * time.Millisecond, BreakerThreshold: 1, BreakerCooldown: time.Millisecond})
		_, err := c.Chat(t.Context(), ChatRequest{}, nil)
		require.NoError(t, err)
		require.EqualValues(t, 2, s.calls.Load())
	})

	t.Run("RetryWaitsOutTheCooldownEvenWhenTheBackoffIsShorter", func(t *testing.T) {
		t.Parallel()
		s := &scripted{errs: []error{boom, nil}}
		c := newRetrying(s, RetryConfig{Attempts: 3, BackoffBase: time.Millisecond, BreakerThreshold: 1, BreakerCooldown: 50 * time.Millisecond})
		var errs []error
		var waits []time.Duration
		_, err := c.Chat(t.Context(), ChatRequest{}, func(attempt int, err error, wait time.Duration) {
			errs, waits = append(errs, err), append(waits, wait)
		})
		require.NoError(t, err, "the third attempt was the probe")
		require.EqualValues(t, 2, s.calls.Load(), "the refused attempt sent nothing")
		require.Len(t, errs, 2)
		require.ErrorIs(t, errs[0], boom)
		require.ErrorIs(t, errs[1], ErrCircuitOpen)
		require.Greater(t, waits[1], 10*time.Millisecond, "waited for half-open, not the 2ms backoff")
	})

	t.Run("ClientErrorsAreNotRetried", func(t *testing.T) {
		t.Parallel()
		s := &scripted{errs: []error{&StatusError{Status: 400, Err: errors.New("bad")}}}
		c := newRetrying(s, RetryConfig{Attempts: 5, BackoffBase: time.Millisecond})
		_, err := c.Chat(t.Context(), ChatRequest{}, nil)
		require.Error(t, err)
		require.EqualValues(t, 1, s.calls.Load())
	})

	t.Run("RetriesReportedAndBounded", func(t *testing.T) {
		t.Parallel()
		s := &scripted{errs: []error{boom, ErrBadReply, boom, boom}}
		c := newRetrying(s, RetryConfig{Attempts: 3, BackoffBase: time.Millisecond, BreakerThreshold: 100})
		var retries []int
		_, err := c.Chat(t.Context(), ChatRequest{}, func(attempt int, err error, wait time.Duration) { retries = append(retries, attempt) })
		require.ErrorContains(t, err, "after 3 attempt(s)")
		require.Equal(t, []int{1, 2}, retries)
	})
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	tool := &Tool{Name: "t", Params: []Param{
		{Name: "id", Type: "string", Required: true, Max: 5},
		{Name: "n", Type: "integer", Min: 1, Max: 10},
		{Name: "env", Type: "string", Enum: []string{"staging", "production"}},
		{Name: "tags", Type: "string_list"},
		{Name: "flag", Type: "boolean"},
		{Name: "params", Type: "object"},
	}}
	for _, tc := range []struct {
		name, raw, wantErr string
	}{
		{"Valid", `{"id":"a","n":3,"env":"staging","tags":["x"],"flag":true,"params":{"k":1}}`, ""},
		{"EmptyIsAnObject", ``, "argument id is required"},
		{"NotJSON", `{"id":`, "not a JSON object"},
		{"Array", `["a"]`, "not a JSON object"},
		{"Null", `null`, "must be a JSON object"},
		{"Trailing", `{"id":"a"} {}`, "trailing data"},
		{"Unknown", `{"id":"a","rm":"-rf"}`, "unknown argument(s) rm"},
		{"WrongType", `{"id":5}`, "id: must be a string"},
		{"TooLong", `{"id":"abcdefgh"}`, "at most 5 characters"},
		{"Float", `{"id":"a","n":1.5}`, "n: must be an integer"},
		{"OutOfRange", `{"id":"a","n":11}`, "between 1 and 10"},
		{"Enum", `{"id":"a","env":"prod"}`, "must be one of staging, production"},
		{"ListOfNumbers", `{"id":"a","tags":[1]}`, "list of strings"},
		{"ObjectWanted", `{"id":"a","params":"x"}`, "must be an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args, err := tool.parseArgs(tc.raw)
			if tc.wantErr == "" {
				require.NoError(t, err)
				require.Equal(t, 3, args["n"])
				require.Equal(t, []string{"x"}, args["tags"])
				return
			}
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

// FuzzParseArgs: whatever the model writes as arguments, validation returns
// an error or arguments of the declared types; it never panics.
func FuzzParseArgs(f *testing.F) {
	tool := builtinTools()
	for _, s := range []string{`{}`, `{"task_id":"x"}`, `{"pipeline":"noop","params":{}}`, `[]`, `null`, `{"limit":1e400}`, `{"a":`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, tl := range tool {
			args, err := tl.parseArgs(raw)
			if err != nil {
				continue
			}
			for _, p := range tl.Params {
				v, ok := args[p.Name]
				if !ok {
					require.False(t, p.Required, "%s.%s required", tl.Name, p.Name)
					continue
				}
				switch p.Type {
				case "string":
					_, ok = v.(string)
				case "integer":
					_, ok = v.(int)
				case "boolean":
					_, ok = v.(bool)
				case "string_list":
					_, ok = v.([]string)
				case "object":
					_, ok = v.(map[string]any)
				}
				require.True(t, ok, "%s.%s has type %T", tl.Name, p.Name, v)
			}
		}
	})
}
