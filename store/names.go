package store

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// names caches team names and user emails by id for the claim, which would
// otherwise join teams and users for every task it locks (about 4.5 µs a
// row, a tenth of the claim). Neither is ever changed once created (no
// statement updates them, and ids are never reused), so an entry cannot go
// stale; a deleted team or user takes its tasks with it.
type names struct {
	mu     sync.RWMutex
	teams  map[string]string
	emails map[string]string
}

// fill sets Team and CreatedBy of tasks from the cache, reading the ids it
// lacks through q (one round trip, and only for ids not seen before).
func (n *names) fill(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, tasks []*task.Task) error {
	var teams, users []string
	n.mu.RLock()
	for _, t := range tasks {
		var ok bool
		if t.Team, ok = n.teams[t.TeamID]; !ok {
			teams = append(teams, t.TeamID)
		}
		if t.CreatedBy, ok = n.emails[t.CreatedByID]; !ok {
			users = append(users, t.CreatedByID)
		}
	}
	n.mu.RUnlock()
	if len(teams) == 0 && len(users) == 0 {
		return nil
	}
	rows, err := q.Query(ctx, `
		SELECT 't', id::text, name FROM teams WHERE id = ANY($1::uuid[])
		UNION ALL SELECT 'u', id::text, email FROM users WHERE id = ANY($2::uuid[])`, teams, users)
	if err != nil {
		return fmt.Errorf("error reading team names: %w", interpretError(err))
	}
	defer rows.Close()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.teams == nil {
		n.teams, n.emails = map[string]string{}, map[string]string{}
	}
	for rows.Next() {
		var kind, id, name string
		if err := rows.Scan(&kind, &id, &name); err != nil {
			return interpretError(err)
		}
		if kind == "t" {
			n.teams[id] = name
		} else {
			n.emails[id] = name
		}
	}
	if err := rows.Err(); err != nil {
		return interpretError(err)
	}
	for _, t := range tasks {
		t.Team, t.CreatedBy = n.teams[t.TeamID], n.emails[t.CreatedByID]
	}
	return nil
}
