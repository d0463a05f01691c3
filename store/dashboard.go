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

// TaskTeamIDs returns the distinct teams of the tasks ids (malformed and
// unknown ids are left out): the dashboard feed re-renders only the team
// sets a batch of changes touches. One primary-key probe per id.
func (s *Store) TaskTeamIDs(ctx context.Context, ids []string) ([]string, error) {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if validUUID(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT team_id::text FROM tasks WHERE id = ANY($1::uuid[])`, valid)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, id)
	}
	return out, interpretError(rows.Err())
}
