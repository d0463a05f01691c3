package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Deployed is one completed deploy of a target.
type Deployed struct {
	TaskID     string          `json:"task_id"`
	Params     json.RawMessage `json:"params"` // public: secret values are "[REDACTED]"
	FinishedAt time.Time       `json:"finished_at"`
	CreatedBy  string          `json:"created_by"` // email
}

// Environment is what is deployed to one target of a pipeline.
type Environment struct {
	TeamID, Team string
	Pipeline     string
	// TargetKey is the target's canonical JSON (pipeline.TargetKey); it is
	// also the target params themselves.
	TargetKey string
	Current   *Deployed // the last completed deploy; nil before the first
	Previous  *Deployed // the last completed one before it whose params differ
	Running   *string   // an unfinished task of the target past its claim
	Waiting   int       // pending (or scheduled) tasks of the target
	// WaitingIDs are the first few of them, in the order they will run.
	WaitingIDs []string
	History    []Deployed
}

// EnvironmentListParams filter EnvironmentList.
type EnvironmentListParams struct {
	TeamIDs  []string // required: the caller's teams
	Pipeline string   // "" for every pipeline
	// TargetKey ("" for all) picks one target.
	TargetKey string
	// History is how many of each target's latest completed deploys to
	// load into History, newest first (0: none).
	History int
}

// EnvironmentList returns the targets that have had a deploy, by pipeline
// and target. It reads the environments rows (one per target, made by the
// write that submits its first deploy) and, per target, index probes
// only: what runs and waits from one read of the index of unfinished
// tasks, the history from the index of completed deploys, so it costs the
// same at a million tasks as at ten.
func (s *Store) EnvironmentList(ctx context.Context, p EnvironmentListParams) ([]Environment, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT e.team_id, tm.name, e.pipeline, e.target_key,
			c.id, c.params, c.finished_at, cu.email,
			pr.id, pr.params, pr.finished_at, pu.email,
			u.running, u.waiting, COALESCE(u.waiting_ids[1:5], '{}'),
			(SELECT COALESCE(jsonb_agg(jsonb_build_object('task_id', h.id, 'params', h.params,
					'finished_at', h.finished_at, 'created_by', hu.email) ORDER BY h.finished_at DESC, h.id DESC), '[]')
				FROM (SELECT id, params, finished_at, created_by FROM tasks
					WHERE $4 > 0 AND team_id = e.team_id AND pipeline = e.pipeline AND target_key = e.target_key
						AND state = 'completed'
					ORDER BY finished_at DESC, id DESC LIMIT $4) h
				JOIN users hu ON hu.id = h.created_by)
		FROM environments e
		JOIN teams tm ON tm.id = e.team_id
		-- current: the target's last completed deploy; previous: the last
		-- one before it whose params differ (what a rollback deploys
		-- again). Both read tasks_team_id_target_key_completed_idx, so
		-- promotion, rollback and protection decide on the tasks
		-- themselves, never on a row kept beside them.
		LEFT JOIN LATERAL (SELECT * FROM tasks
			WHERE team_id = e.team_id AND pipeline = e.pipeline AND target_key = e.target_key AND state = 'completed'
			ORDER BY finished_at DESC, id DESC LIMIT 1) c ON true
		LEFT JOIN users cu ON cu.id = c.created_by
		LEFT JOIN LATERAL (SELECT * FROM tasks
			WHERE team_id = e.team_id AND pipeline = e.pipeline AND target_key = e.target_key AND state = 'completed'
				AND params <> c.params
			ORDER BY finished_at DESC, id DESC LIMIT 1) pr ON true
		LEFT JOIN users pu ON pu.id = pr.created_by
		-- what runs and what waits, from one range of
		-- tasks_team_id_target_key_unfinished_idx: the first task past its
		-- claim, and the waiting ones counted and in the order they will run
		CROSS JOIN LATERAL (
			SELECT (array_agg(id ORDER BY created_at, id) FILTER (WHERE state NOT IN ('pending', 'scheduled')))[1] AS running,
				count(*) FILTER (WHERE state IN ('pending', 'scheduled')) AS waiting,
				array_agg(id ORDER BY priority, created_at, id) FILTER (WHERE state IN ('pending', 'scheduled')) AS waiting_ids
			FROM tasks
			WHERE team_id = e.team_id AND pipeline = e.pipeline AND target_key = e.target_key
				AND state NOT IN `+terminalStates+`) u
		WHERE e.team_id = ANY($1) AND ($2 = '' OR e.pipeline = $2) AND ($3 = '' OR e.target_key = $3)
		ORDER BY e.pipeline, e.target_key, tm.name`,
		p.TeamIDs, p.Pipeline, p.TargetKey, p.History)
	if err != nil {
		return nil, fmt.Errorf("error listing environments: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, scanEnvironment)
	if err != nil {
		return nil, fmt.Errorf("error listing environments: %w", interpretError(err))
	}
	return out, nil
}

func scanEnvironment(row pgx.CollectableRow) (Environment, error) {
	var e Environment
	var cur, prev deployedCols
	var history []byte
	err := row.Scan(&e.TeamID, &e.Team, &e.Pipeline, &e.TargetKey,
		&cur.id, &cur.params, &cur.finishedAt, &cur.createdBy,
		&prev.id, &prev.params, &prev.finishedAt, &prev.createdBy,
		&e.Running, &e.Waiting, &e.WaitingIDs, &history)
	if err != nil {
		return e, err
	}
	e.Current, e.Previous = cur.deployed(), prev.deployed()
	if err := json.Unmarshal(history, &e.History); err != nil {
		return e, fmt.Errorf("error reading a target's history: %w", err)
	}
	for i := range e.History {
		utc(&e.History[i].FinishedAt)
	}
	return e, nil
}

// deployedCols are a LEFT JOINed deploy's columns: all NULL when it is missing.
type deployedCols struct {
	id, createdBy *string
	params        []byte
	finishedAt    *time.Time
}

func (d deployedCols) deployed() *Deployed {
	if d.id == nil || d.finishedAt == nil || d.createdBy == nil {
		return nil
	}
	return &Deployed{TaskID: *d.id, Params: json.RawMessage(d.params), FinishedAt: d.finishedAt.UTC(), CreatedBy: *d.createdBy}
}
