package event

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"flightdeck/internal/notify"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

// PublicTypes are the event types the outbox delivers to consumers: those
// of the contract (section 4).
var PublicTypes = []task.EventType{
	task.EventTaskState, task.EventStepStarted, task.EventStepLog, task.EventStepCompleted, task.EventStepFailed,
	task.EventStepRetrying, task.EventStepCompensating, task.EventStepCompensated, task.EventApprovalRequested,
	task.EventApprovalDecided, task.EventToolExecuted, task.EventAgentThinking, task.EventAgentToolCall,
	task.EventAgentToolResult, task.EventAgentQuestion, task.EventAgentError, task.EventArtifactCreated,
	task.EventTaskCompleted, task.EventTaskFailed, task.EventTaskCancelled,
}

// Consumer is a durable subscriber of the outbox: it receives every
// committed event of its types, in commit-safe order, from a cursor kept in
// the database under Name, so a restart resumes where it stopped. Delivery
// is at least once: the cursor moves after Handle returns nil, so a crash
// in between hands the batch over again, and Handle must be idempotent
// (the webhook dispatcher inserts deliveries with deterministic ids).
type Consumer struct {
	Name   string
	Types  []task.EventType // default PublicTypes
	Handle func(ctx context.Context, events []store.OutboxEvent) error
	// Poll is how often the outbox is read without a wake-up (default 1s):
	// notifications only shorten the wait, the poll is what guarantees
	// progress.
	Poll   time.Duration
	Batch  int // events per read, default 500
	Logger *slog.Logger
}

// RunConsumer feeds c from the outbox until ctx ends. hub (may be nil) wakes
// it when any task's events change, in this process or, through LISTEN,
// any other.
func RunConsumer(ctx context.Context, st *store.Store, hub *notify.Hub, c Consumer) error {
	if c.Name == "" || c.Handle == nil {
		return fmt.Errorf("outbox consumer needs a name and a handler")
	}
	logger := c.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	poll := c.Poll
	if poll <= 0 {
		poll = time.Second
	}
	batch := c.Batch
	if batch <= 0 {
		batch = 500
	}
	types := c.Types
	if len(types) == 0 {
		types = PublicTypes
	}
	names := make([]string, len(types))
	for i, t := range types {
		names[i] = string(t)
	}
	var wake <-chan struct{}
	if hub != nil {
		sub := hub.Subscribe("")
		defer sub.Close()
		wake = sub.C
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	// A wake-up says something was committed. Finding nothing then means an
	// older transaction still holds the read back (see store.OutboxRead):
	// look again soon, backing off, rather than only at the next poll.
	var again time.Duration
	woke := false
	for {
		scanned, more, err := consumeOnce(ctx, st, c, names, batch)
		if err != nil && ctx.Err() == nil {
			logger.Warn("Outbox consumer failed; retrying", "consumer", c.Name, "error", err)
		}
		if more && err == nil {
			continue
		}
		var soon <-chan time.Time
		var timer *time.Timer
		if woke && scanned == 0 && err == nil && again < poll {
			again = max(2*again, 10*time.Millisecond)
			timer = time.NewTimer(again)
			soon = timer.C
		} else {
			woke, again = false, 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-wake:
			woke, again = true, 0
		case <-soon:
		case <-tick.C:
			woke = false
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// consumeOnce handles one batch: it returns the rows scanned and whether
// the batch was full (read again at once).
func consumeOnce(ctx context.Context, st *store.Store, c Consumer, types []string, batch int) (int, bool, error) {
	b, err := st.OutboxRead(ctx, c.Name, types, batch)
	if err != nil {
		return 0, false, err
	}
	if b.Scanned == 0 {
		return 0, false, nil
	}
	if len(b.Events) > 0 {
		if err := c.Handle(ctx, b.Events); err != nil {
			return b.Scanned, false, fmt.Errorf("error handling outbox events: %w", err)
		}
	}
	// Record progress even when ctx ended meanwhile: the batch is handled,
	// and handing it over again after a restart would only repeat it.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := st.OutboxAdvance(actx, c.Name, b.Next); err != nil {
		return b.Scanned, false, err
	}
	return b.Scanned, b.Scanned == batch, nil
}
