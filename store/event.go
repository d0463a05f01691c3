package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"

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
	rows, err := s.pool.Query(ctx, `
		SELECT task_id, seq, type, status, step, total_step, step_name, tool, message, data, created_at
		FROM task_events WHERE task_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, taskID, afterSeq, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	return scanEvents(rows)
}

func scanEvents(rows pgx.Rows) ([]task.Event, error) {
	defer rows.Close()
	var out []task.Event
	for rows.Next() {
		var e task.Event
		var typ, status string
		var data []byte
		if err := rows.Scan(&e.TaskID, &e.Seq, &typ, &status, &e.Step, &e.TotalStep, &e.StepName, &e.Tool, &e.Message, &data, &e.Time); err != nil {
			return nil, interpretError(err)
		}
		e.Type, e.Status, e.Data = task.EventType(typ), task.Status(status), json.RawMessage(data)
		e.Time = e.Time.UTC()
		out = append(out, e)
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
	return s.StepWrite(ctx, taskID, token, StepWrite{Events: events})
}

// ErrLeaseLost: another worker holds the task now (or it ended); the caller
// must stop working on it.
var ErrLeaseLost = fmt.Errorf("lease lost")
