package store

import (
	"context"
	"fmt"
	"math"
	"time"

	"flightdeck/workflow/task"
)

// EventList returns a task's events with seq > afterSeq in seq order, at most
// limit (default 1000). The task must belong to one of teamIDs.
func (s *Store) EventList(ctx context.Context, teamIDs []string, taskID string, afterSeq, limit int) ([]task.Event, error) {
	if !validUUID(taskID) {
		return nil, ErrNotFound
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tasks WHERE id = $1 AND team_id = ANY($2))`, taskID, teamIDs).Scan(&ok); err != nil {
		return nil, interpretError(err)
	}
	if !ok {
		return nil, ErrNotFound
	}
	return s.EventsAfter(ctx, taskID, afterSeq, limit)
}

// EventsAfter returns a task's events after a seq without a team check (the
// in-process Hub, which checked access when the subscription was made).
func (s *Store) EventsAfter(ctx context.Context, taskID string, afterSeq, limit int) ([]task.Event, error) {
	if limit <= 0 {
		limit = 1000
	}
	// seq is an int4: no event comes after its largest value, and a larger
	// afterSeq (a client's after_seq) would not fit the parameter.
	afterSeq = min(afterSeq, math.MaxInt32)
	// Each batch holds at least one event, so limit batches hold enough.
	rows, err := s.pool.Query(ctx, `
		SELECT first_seq, created_at, events FROM task_event_batches
		WHERE task_id = $1 AND last_seq > $2 ORDER BY last_seq LIMIT $3`, taskID, afterSeq, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []task.Event
	for rows.Next() {
		var first int
		var at time.Time
		var raw []byte
		if err := rows.Scan(&first, &at, &raw); err != nil {
			return nil, interpretError(err)
		}
		events, err := decodeEvents(taskID, first, at, raw)
		if err != nil {
			return nil, err
		}
		for _, e := range events {
			if e.Seq > afterSeq && len(out) < limit {
				out = append(out, e)
			}
		}
	}
	return out, interpretError(rows.Err())
}

// EventAppend appends events for a task held under lease token (a worker's
// progress) in one statement: nothing is written if the lease was lost, and
// ErrLeaseLost tells the worker to stop.
func (s *Store) EventAppend(ctx context.Context, taskID, token string, events []task.Event) error {
	if len(events) == 0 {
		return nil
	}
	written, err := s.TaskWrites(ctx, []TaskWrite{{ID: taskID, Token: token, Events: events}})
	if err != nil {
		return err
	}
	if _, ok := written[taskID]; !ok {
		return ErrLeaseLost
	}
	return nil
}

// ErrLeaseLost: another worker holds the task now (or it ended); the caller
// must stop working on it.
var ErrLeaseLost = fmt.Errorf("lease lost")
