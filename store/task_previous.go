package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// PreviousDeploy is the deploy that was current on a target before another.
type PreviousDeploy struct {
	TaskID     string
	Params     json.RawMessage
	FinishedAt time.Time
}

// PreviousDeployQuery asks for what the deploy TaskID of Pipeline to the
// target TargetKey (pipeline.TargetKey) in TeamID replaces, as of Before.
type PreviousDeployQuery struct {
	TeamID, Pipeline, TargetKey, TaskID string
	Before                              time.Time
}

// TaskPreviousDeploy returns the last deploy of pipeline to target (its
// target key, pipeline.TargetKey) in team that completed before `before`,
// other than taskID: what a deploy replaces. ErrNotFound when there is none
// (deploys submitted before targets were stored have none).
func (s *Store) TaskPreviousDeploy(ctx context.Context, teamID, pipeline string, targetKey string, taskID string, before time.Time) (*PreviousDeploy, error) {
	prev, err := s.TaskPreviousDeploys(ctx, []PreviousDeployQuery{
		{TeamID: teamID, Pipeline: pipeline, TargetKey: targetKey, TaskID: taskID, Before: before}})
	if err != nil {
		return nil, err
	}
	if prev[0] == nil {
		return nil, ErrNotFound
	}
	return prev[0], nil
}

// TaskPreviousDeploys answers every query in one statement, by the rule of
// TaskPreviousDeploy (which is this with one query, so the rule is written
// once): out[i] is what qs[i]'s deploy replaces, nil when nothing. A page
// listing many deploys (the approvals inbox) asks for all of them at once
// rather than once per deploy.
func (s *Store) TaskPreviousDeploys(ctx context.Context, qs []PreviousDeployQuery) ([]*PreviousDeploy, error) {
	out := make([]*PreviousDeploy, len(qs))
	teams, pipelines, targets, tasks := make([]string, 0, len(qs)), make([]string, 0, len(qs)), make([]string, 0, len(qs)), make([]string, 0, len(qs))
	befores, idx := make([]time.Time, 0, len(qs)), make([]int, 0, len(qs))
	for i, q := range qs {
		// An ID that is no uuid names no task: it replaces nothing, and
		// sending it would fail the whole batch.
		if !validUUID(q.TeamID) || !validUUID(q.TaskID) {
			continue
		}
		teams, pipelines, targets, tasks = append(teams, q.TeamID), append(pipelines, q.Pipeline), append(targets, q.TargetKey), append(tasks, q.TaskID)
		befores, idx = append(befores, q.Before), append(idx, i)
	}
	if len(idx) == 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `
		-- per query, the target's completed deploys newest first, stopping
		-- at the first that finished before it: a range of
		-- tasks_team_id_target_key_completed_idx each, however long the
		-- team's history and however rarely the target was deployed
		SELECT q.n, p.id, p.params, p.finished_at
		FROM unnest($1::uuid[], $2::text[], $3::text[], $4::uuid[], $5::timestamptz[])
			WITH ORDINALITY AS q(team_id, pipeline, target_key, task_id, cutoff, n)
		CROSS JOIN LATERAL (
			SELECT id, params, finished_at FROM tasks
			WHERE team_id = q.team_id AND pipeline = q.pipeline AND target_key = q.target_key
				AND state = 'completed' AND finished_at < q.cutoff AND id <> q.task_id
			ORDER BY finished_at DESC, id DESC LIMIT 1) p`,
		teams, pipelines, targets, tasks, befores)
	if err != nil {
		return nil, fmt.Errorf("error reading previous deploys: %w", interpretError(err))
	}
	defer rows.Close()
	for rows.Next() {
		var n int
		var d PreviousDeploy
		if err := rows.Scan(&n, &d.TaskID, &d.Params, &d.FinishedAt); err != nil {
			return nil, fmt.Errorf("error reading previous deploys: %w", interpretError(err))
		}
		d.FinishedAt = d.FinishedAt.UTC()
		out[idx[n-1]] = &d
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("error reading previous deploys: %w", interpretError(err))
	}
	return out, nil
}
