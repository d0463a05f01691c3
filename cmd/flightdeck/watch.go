package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/coder/websocket"

	"flightdeck/internal/backoff"
)

func runWatch(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("watch", env.stderr)
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: usage: flightdeck watch TASK_ID", errUsage)
	}
	client, err := newAPIClient(env)
	if err != nil {
		return err
	}
	return watchTask(ctx, env, client, fs.Arg(0))
}

type watchEvent struct {
	Seq       int             `json:"seq"`
	Type      string          `json:"type"`
	Status    string          `json:"status"`
	Step      int             `json:"step"`
	TotalStep int             `json:"total_step"`
	StepName  string          `json:"step_name"`
	Message   string          `json:"message"`
	Data      json.RawMessage `json:"data"`
}

// errTaskNotCompleted makes watch exit non-zero when the task ended otherwise.
var errTaskNotCompleted = errors.New("task did not complete")

// watchTask follows a task over the WebSocket, replaying what happened and
// resuming after a dropped connection from the last seq it printed.
func watchTask(ctx context.Context, env *cliEnv, client *apiClient, id string) error {
	after := 0
	done := map[int]bool{}
	for try := 1; ; try++ {
		end, err := watchOnce(ctx, env, client, id, &after, done)
		if end != "" {
			if end == "task.completed" {
				return nil
			}
			return fmt.Errorf("%w: %s", errTaskNotCompleted, strings.TrimPrefix(end, "task."))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var perm *permanentWatchError
		if errors.As(err, &perm) {
			return perm.err
		}
		fmt.Fprintf(env.stderr, "connection lost (%v); resuming after event %d\n", err, after)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff.Exponential(500*time.Millisecond, 10*time.Second, try)):
		}
	}
}

type permanentWatchError struct{ err error }

func (p *permanentWatchError) Error() string { return p.err.Error() }

func watchOnce(ctx context.Context, env *cliEnv, client *apiClient, id string, after *int, done map[int]bool) (string, error) {
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	c, _, err := websocket.Dial(dctx, client.wsURL(), &websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {"Bearer " + client.token}}})
	cancel()
	if err != nil {
		return "", err
	}
	defer c.CloseNow()
	c.SetReadLimit(4 << 20)
	sub, _ := json.Marshal(map[string]any{"type": "subscribe", "task_id": id, "after_seq": *after, "id": "watch"})
	if err := c.Write(ctx, websocket.MessageText, sub); err != nil {
		return "", err
	}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return "", err
		}
		var m struct {
			Type    string     `json:"type"`
			Code    string     `json:"code"`
			Message string     `json:"message"`
			Event   watchEvent `json:"event"`
		}
		if json.Unmarshal(b, &m) != nil {
			continue
		}
		switch m.Type {
		case "error":
			return "", &permanentWatchError{fmt.Errorf("%s (%s)", m.Message, m.Code)}
		case "event":
			e := m.Event
			if e.Seq <= *after {
				continue // already printed before a reconnect
			}
			*after = e.Seq
			printEvent(env, e, done)
			if strings.HasPrefix(e.Type, "task.") && (e.Type == "task.completed" || e.Type == "task.failed" || e.Type == "task.cancelled") {
				return e.Type, nil
			}
		}
	}
}

// printEvent renders one event as a terminal line, with a progress bar when
// a step completes.
func printEvent(env *cliEnv, e watchEvent, done map[int]bool) {
	ts := ""
	if e.Step > 0 && e.TotalStep > 0 {
		ts = fmt.Sprintf("[%d/%d %s] ", e.Step, e.TotalStep, e.StepName)
	}
	switch e.Type {
	case "step.log":
		fmt.Fprintf(env.stdout, "    │ %s\n", e.Message)
		return
	case "tool.executed":
		return
	}
	fmt.Fprintf(env.stdout, "%4d %-20s %s%s\n", e.Seq, e.Type, ts, e.Message)
	if e.Type == "step.completed" && e.TotalStep > 0 {
		done[e.Step] = true
		n := len(done)
		const width = 30
		filled := width * n / e.TotalStep
		fmt.Fprintf(env.stdout, "     [%s%s] %d/%d steps, %d%%\n", strings.Repeat("█", filled), strings.Repeat("░", width-filled), n, e.TotalStep, 100*n/e.TotalStep)
	}
}
