package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The local provider's routes and effects. Every mutating method records
// its effect in local_effects in the same transaction as the change, keyed
// by the step's idempotency key: a crash before the commit leaves neither,
// one after it leaves both, so a re-run either acts or finds the record.

// LocalEffect names the action attempt a change belongs to.
type LocalEffect struct {
	Key    string // the step's idempotency key
	Action string // e.g. local.dns_create
	TaskID string // the task whose step it is; retention asks it whether it may still run
}

// LocalEffectGet returns the output recorded for key, or ErrNotFound.
func (s *Store) LocalEffectGet(ctx context.Context, key string) (json.RawMessage, error) {
	var out []byte
	err := s.pool.QueryRow(ctx, `SELECT output FROM local_effects WHERE idempotency_key = $1`, key).Scan(&out)
	if err != nil {
		return nil, interpretError(err)
	}
	return out, nil
}

// localEffectRecord stores v as the output of eff inside tx.
func localEffectRecord(ctx context.Context, tx pgx.Tx, eff LocalEffect, v any) error {
	out, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("error encoding effect: %w", err)
	}
	var taskID any // a name that is no task id (tests, tools) records none
	if validUUID(eff.TaskID) {
		taskID = eff.TaskID
	}
	_, err = tx.Exec(ctx, `INSERT INTO local_effects (idempotency_key, action, output, task_id) VALUES ($1, $2, $3, $4)`,
		eff.Key, eff.Action, out, taskID)
	return interpretError(err)
}

// localTeamID resolves a team name; the saga hands actions names, not ids.
func localTeamID(ctx context.Context, tx pgx.Tx, team string) (string, error) {
	var id string
	if err := tx.QueryRow(ctx, `SELECT id FROM teams WHERE name = $1`, team).Scan(&id); err != nil {
		return "", fmt.Errorf("team %q: %w", team, interpretError(err))
	}
	return id, nil
}

// LocalRouteChange is what LocalRouteCreate/LocalRouteDelete did; it is
// also the action's output, which the undo reads back.
type LocalRouteChange struct {
	Host       string `json:"host"`
	Created    bool   `json:"created,omitempty"`
	Deleted    bool   `json:"deleted,omitempty"`
	InstanceID string `json:"instance_id,omitempty"`
}

// LocalRouteCreate adds the route host for team (pointing at instanceID
// if that instance still exists). An existing route of the same team is
// left as it is (Created false); one of another team is ErrForbidden.
func (s *Store) LocalRouteCreate(ctx context.Context, team, host, instanceID string, eff LocalEffect) (LocalRouteChange, error) {
	ch := LocalRouteChange{Host: host}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		teamID, err := localTeamID(ctx, tx, team)
		if err != nil {
			return err
		}
		var inst *string
		if validUUID(instanceID) {
			inst = &instanceID
		}
		// ON CONFLICT DO NOTHING + re-read: two creators racing both see
		// the one route, neither errors.
		tag, err := tx.Exec(ctx, `
			INSERT INTO local_routes (host, team_id, instance_id)
			VALUES ($1, $2, (SELECT id FROM local_instances WHERE id = $3 AND team_id = $2))
			ON CONFLICT (host) DO NOTHING`, host, teamID, inst)
		if err != nil {
			return interpretError(err)
		}
		ch.Created = tag.RowsAffected() == 1
		var owner string
		var cur *string
		if err := tx.QueryRow(ctx, `SELECT team_id, instance_id FROM local_routes WHERE host = $1`, host).Scan(&owner, &cur); err != nil {
			return interpretError(err)
		}
		if owner != teamID {
			return fmt.Errorf("%w: host %s belongs to another team", ErrForbidden, host)
		}
		if cur != nil {
			ch.InstanceID = *cur
		}
		return localEffectRecord(ctx, tx, eff, ch)
	})
	return ch, err
}

// LocalRouteDelete removes team's route host, remembering its instance so
// an undo can put it back. A missing route is not an error (Deleted false).
func (s *Store) LocalRouteDelete(ctx context.Context, team, host string, eff LocalEffect) (LocalRouteChange, error) {
	ch := LocalRouteChange{Host: host}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		teamID, err := localTeamID(ctx, tx, team)
		if err != nil {
			return err
		}
		var owner string
		var cur *string
		err = tx.QueryRow(ctx, `SELECT team_id, instance_id FROM local_routes WHERE host = $1 FOR UPDATE`, host).Scan(&owner, &cur)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return localEffectRecord(ctx, tx, eff, ch)
		case err != nil:
			return interpretError(err)
		case owner != teamID:
			return fmt.Errorf("%w: host %s belongs to another team", ErrForbidden, host)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM local_routes WHERE host = $1`, host); err != nil {
			return interpretError(err)
		}
		ch.Deleted = true
		if cur != nil {
			ch.InstanceID = *cur
		}
		return localEffectRecord(ctx, tx, eff, ch)
	})
	return ch, err
}

// LocalRoute is a row of local_routes.
type LocalRoute struct {
	Host         string
	TeamID       string
	InstanceID   string // "" when no instance serves it
	CanaryID     string // "" when the route has no canary (contract §11)
	CanaryWeight int    // the canary's share of requests, 0–100
	UpdatedAt    time.Time
}

// LocalRouteGet returns the route for host, or ErrNotFound.
func (s *Store) LocalRouteGet(ctx context.Context, host string) (*LocalRoute, error) {
	var r LocalRoute
	var inst, canary *string
	err := s.pool.QueryRow(ctx, `SELECT host, team_id, instance_id, canary_id, canary_weight, updated_at FROM local_routes WHERE host = $1`, host).
		Scan(&r.Host, &r.TeamID, &inst, &canary, &r.CanaryWeight, &r.UpdatedAt)
	if err != nil {
		return nil, interpretError(err)
	}
	if inst != nil {
		r.InstanceID = *inst
	}
	if canary != nil {
		r.CanaryID = *canary
	}
	return &r, nil
}

// LocalTarget is where the proxy sends a route's requests.
type LocalTarget struct {
	InstanceID string // "" when the route has no running instance (503)
	Port       int
	Node       string
	Version    string
	// Canary is the route's running canary, nil when it has none; it
	// receives Weight percent of the requests (contract §11).
	Canary *LocalTarget
	Weight int
}

// LocalRouteTarget resolves host to its current running instance and its
// running canary. No route is ErrNotFound; a route without a running
// instance has InstanceID "" (its canary, if running, then serves all).
func (s *Store) LocalRouteTarget(ctx context.Context, host string) (LocalTarget, error) {
	var t LocalTarget
	var id, node, version, cid, cnode, cversion *string
	var port, cport *int32
	err := s.pool.QueryRow(ctx, `
		SELECT i.id, i.port, i.node, i.version, c.id, c.port, c.node, c.version, r.canary_weight
		FROM local_routes r
			LEFT JOIN local_instances i ON i.id = r.instance_id AND i.state = 'running'
			LEFT JOIN local_instances c ON c.id = r.canary_id AND c.state = 'running'
		WHERE r.host = $1`, host).Scan(&id, &port, &node, &version, &cid, &cport, &cnode, &cversion, &t.Weight)
	if err != nil {
		return t, interpretError(err)
	}
	if id != nil {
		t.InstanceID, t.Port, t.Node, t.Version = *id, int(*port), *node, *version
	}
	if cid != nil {
		t.Canary = &LocalTarget{InstanceID: *cid, Port: int(*cport), Node: *cnode, Version: *cversion}
		if id == nil { // nothing else serves: the canary takes everything
			t.InstanceID, t.Port, t.Node, t.Version, t.Canary, t.Weight = *cid, int(*cport), *cnode, *cversion, nil, 0
		}
	} else {
		t.Weight = 0
	}
	return t, nil
}

// LocalRouteSwitch points host at to ("" for none) if it currently points
// at from; a route already moved on is left alone (idempotent undo).
func (s *Store) LocalRouteSwitch(ctx context.Context, host, from, to string) error {
	var toArg *string
	if to != "" {
		toArg = &to
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE local_routes SET instance_id = $3, updated_at = now()
		WHERE host = $1 AND instance_id = $2`, host, from, toArg)
	return interpretError(err)
}

// LocalEffectPrune deletes up to limit effect records older than olderThan
// that no task may still need and returns how many it deleted. An effect
// exists so that a re-run of its step (a retry, a resumed task, a
// compensation retried from needs_attention) finds it instead of acting
// twice. Only the task that planned the step can re-run it (its key hashes
// the task id), and a task in a terminal state never runs again, so an
// effect may go once its task ended before now - olderThan, or no longer
// exists. Effects recorded before they named their task are kept.
func (s *Store) LocalEffectPrune(ctx context.Context, olderThan time.Duration, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `
		DELETE FROM local_effects WHERE idempotency_key IN (
			SELECT e.idempotency_key FROM local_effects e
			WHERE e.created_at < now() - make_interval(secs => $1)
				AND e.task_id IS NOT NULL -- recorded before tasks were named: kept
				AND NOT EXISTS (
					SELECT 1 FROM tasks t
					WHERE t.id = e.task_id
						AND (t.state NOT IN `+terminalStates+` OR t.finished_at IS NULL
							OR t.finished_at >= now() - make_interval(secs => $1)))
			LIMIT $2
			FOR UPDATE OF e SKIP LOCKED)`, olderThan.Seconds(), limit)
	if err != nil {
		return 0, fmt.Errorf("error pruning local effects: %w", interpretError(err))
	}
	return int(tag.RowsAffected()), nil
}
