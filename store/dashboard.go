package store

import (
	"context"
	"time"

	"flightdeck/workflow/task"
)

// QueueCount is how many unfinished tasks share a state and priority, and
// when the oldest of them was created.
type QueueCount struct {
	State    task.State
	Priority task.Priority
	Count    int
	Oldest   time.Time
}

// TaskQueueCounts counts the unfinished tasks of teamIDs by state and
// priority. The states are named (not "NOT IN the finished ones") so the
// read ranges over tasks_team_id_state_created_at_idx and never touches
// finished tasks.
func (s *Store) TaskQueueCounts(ctx context.Context, teamIDs []string) ([]QueueCount, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT state, priority, count(*), min(created_at) FROM tasks
		WHERE team_id = ANY($1) AND state = ANY($2)
		GROUP BY state, priority ORDER BY state, priority`, teamIDs, unfinishedStates())
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []QueueCount
	for rows.Next() {
		var c QueueCount
		var state string
		var prio int16
		if err := rows.Scan(&state, &prio, &c.Count, &c.Oldest); err != nil {
			return nil, interpretError(err)
		}
		c.State, c.Priority, c.Oldest = task.State(state), task.Priority(prio), c.Oldest.UTC()
		out = append(out, c)
	}
	return out, interpretError(rows.Err())
}

// unfinishedStates names every state a task can still leave.
func unfinishedStates() []string {
	var out []string
	for _, st := range task.States {
		if !st.Terminal() {
			out = append(out, string(st))
		}
	}
	return out
}
