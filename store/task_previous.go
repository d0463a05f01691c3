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

// TaskPreviousDeploy returns the last deploy of pipeline to target (its
// target key, pipeline.TargetKey) in team that completed before `before`,
// other than taskID: what a deploy replaces. ErrNotFound when there is none
// (deploys submitted before targets were stored have none).
func (s *Store) TaskPreviousDeploy(ctx context.Context, teamID, pipeline string, targetKey string, taskID string, before time.Time) (*PreviousDeploy, error) {
	var d PreviousDeploy
	err := s.pool.QueryRow(ctx, `
		-- the target's completed deploys, newest first: a range of
		-- tasks_team_id_target_key_completed_idx, however long the team's
		-- history and however rarely this target was deployed
		SELECT id, params, finished_at FROM tasks
		WHERE team_id = $1 AND pipeline = $2 AND target_key = $3 AND state = 'completed'
			AND finished_at < $5 AND id <> $4
		ORDER BY finished_at DESC, id DESC LIMIT 1`, teamID, pipeline, targetKey, taskID, before).Scan(&d.TaskID, &d.Params, &d.FinishedAt)
	if err != nil {
		return nil, interpretError(err)
	}
	d.FinishedAt = d.FinishedAt.UTC()
	return &d, nil
}
