package handlers

import (
	"context"
	"encoding/json"
	"time"

	"flightdeck/views/pages"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// protectionNotes say on the run page what the rules of the task's
// environment do to it: a freeze holds it, it waits for its time, an
// admin overrode the rules, it was promoted.
func (h *Handler) protectionNotes(ctx context.Context, t *task.Task) ([]pages.KV, error) {
	var out []pages.KV
	held, err := saga.Held(ctx, h.store, h.pipelines.Environments(), t, time.Now())
	if err != nil {
		return nil, err
	}
	if held != nil {
		out = append(out, pages.KV{Key: "task-held", Value: "Held: " + t.Environment + " is frozen (" + held.Message + ") until " +
			held.Until.Format("Mon 2 Jan 15:04 UTC") + "; it starts when the freeze ends."})
	}
	if t.State == task.StateScheduled && t.RunAt != nil && held == nil {
		out = append(out, pages.KV{Key: "task-run-at", Value: "Scheduled: runs at " + t.RunAt.UTC().Format("Mon 2 Jan 15:04:05 UTC") + "."})
	}
	if len(t.Override) > 0 {
		var o struct{ By, Reason string }
		_ = json.Unmarshal(t.Override, &o)
		out = append(out, pages.KV{Key: "task-override", Value: "Override by " + o.By + ": " + o.Reason})
	}
	if t.PromotedFrom != nil {
		out = append(out, pages.KV{Key: "task-promoted", Value: *t.PromotedFrom})
	}
	return out, nil
}
