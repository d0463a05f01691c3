package store

import (
	"context"
	"encoding/json"
	"time"
)

// PreviousDeploy is the deploy that was current on a target before another.
type PreviousDeploy struct {
	TaskID     string
	Params     json.RawMessage
	FinishedAt time.Time
}

// TaskPreviousDeploy returns the last deploy of pipeline to target (the
// params it must contain) in team that completed before `before`, other than
// taskID: what a deploy replaces. ErrNotFound when there is none.
func (s *Store) TaskPreviousDeploy(ctx context.Context, teamID, pipeline string, target json.RawMessage, taskID string, before time.Time) (*PreviousDeploy, error) {
	var d PreviousDeploy
	err := s.pool.QueryRow(ctx, `
		SELECT id, params, finished_at FROM tasks
		WHERE team_id = $1 AND finished_at IS NOT NULL AND finished_at < $5 AND state = 'completed'
			AND kind = 'deploy' AND pipeline = $2 AND params @> $3::jsonb AND id <> $4
		ORDER BY finished_at DESC LIMIT 1`, teamID, pipeline, string(target), taskID, before).Scan(&d.TaskID, &d.Params, &d.FinishedAt)
	if err != nil {
		return nil, interpretError(err)
	}
	d.FinishedAt = d.FinishedAt.UTC()
	return &d, nil
}
