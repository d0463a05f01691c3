package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LocalInstance is a row of local_instances: one demo-app process. Rows
// are scanned by column name (SELECT *: a new column is a field here).
type LocalInstance struct {
	ID         string     `db:"id"`
	TeamID     string     `db:"team_id"`
	Host       string     `db:"host"`
	Version    string     `db:"version"`
	PID        int        `db:"pid"`
	Port       int        `db:"port"`
	Node       string     `db:"node"`
	State      string     `db:"state"` // starting | running | stopped | failed
	PreviousID *string    `db:"previous_id"`
	Key        string     `db:"idempotency_key"`
	CreatedAt  time.Time  `db:"created_at"`
	UpdatedAt  time.Time  `db:"updated_at"`
	StoppedAt  *time.Time `db:"stopped_at"`
}

// LocalInstanceBeginParams describe an instance about to be started.
type LocalInstanceBeginParams struct {
	Team    string // team name
	Host    string // the route it will serve
	Version string
	Node    string // the host running it
	Key     string // instance_start's idempotency key
}

// LocalInstanceBegin records an instance in state starting before its
// process exists, so a crash mid-start leaves a row that recovery (or the
// re-run with the same key) finds. A re-run gets the same row back, with the
// pid of the process the earlier attempt may have left behind.
func (s *Store) LocalInstanceBegin(ctx context.Context, p LocalInstanceBeginParams) (*LocalInstance, error) {
	var inst *LocalInstance
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		teamID, err := localTeamID(ctx, tx, p.Team)
		if err != nil {
			return err
		}
		var owner string
		err = tx.QueryRow(ctx, `SELECT team_id FROM local_routes WHERE host = $1`, p.Host).Scan(&owner)
		if errors.Is(err, pgx.ErrNoRows) || (err == nil && owner != teamID) {
			return fmt.Errorf("%w: no route %s for team %s (run local.dns_create first)", ErrNotFound, p.Host, p.Team)
		}
		if err != nil {
			return interpretError(err)
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO local_instances (team_id, host, version, node, state, idempotency_key)
			VALUES ($1, $2, $3, $4, 'starting', $5)
			ON CONFLICT (idempotency_key) DO UPDATE SET updated_at = now()`, teamID, p.Host, p.Version, p.Node, p.Key)
		if err != nil {
			return interpretError(err)
		}
		inst, err = oneByName[LocalInstance](tx.Query(ctx, `SELECT * FROM local_instances WHERE idempotency_key = $1`, p.Key))
		return err
	})
	return inst, err
}

// LocalInstanceGet returns an instance by id.
func (s *Store) LocalInstanceGet(ctx context.Context, id string) (*LocalInstance, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	return oneByName[LocalInstance](s.pool.Query(ctx, `SELECT * FROM local_instances WHERE id = $1`, id))
}

// LocalInstanceGetByKey returns the instance an instance_start with key made.
func (s *Store) LocalInstanceGetByKey(ctx context.Context, key string) (*LocalInstance, error) {
	return oneByName[LocalInstance](s.pool.Query(ctx, `SELECT * FROM local_instances WHERE idempotency_key = $1`, key))
}

// LocalInstanceSetProcess records the process of an instance (pid, port,
// state) as soon as it exists, so a crash cannot orphan it unrecorded.
func (s *Store) LocalInstanceSetProcess(ctx context.Context, id string, pid, port int, state string) error {
	_, err := s.pool.Exec(ctx, `
		UPDATE local_instances SET pid = $2, port = $3, state = $4, updated_at = now(),
			stopped_at = CASE WHEN $4 IN ('stopped', 'failed') THEN now() END
		WHERE id = $1`, id, pid, port, state)
	return interpretError(err)
}

// LocalActivation is what instance_start did; also its output.
type LocalActivation struct {
	InstanceID string `json:"instance_id"`
	Host       string `json:"host"`
	Version    string `json:"version"`
	Port       int    `json:"port"`
	PID        int    `json:"pid"`
	PreviousID string `json:"previous_id,omitempty"`
	// Canary: the instance became the route's canary beside PreviousID (the
	// current one) with Weight percent of the requests (contract §11).
	Canary bool `json:"canary,omitempty"`
	Weight int  `json:"weight"`
}

// LocalInstanceActivate puts a started instance on its route with weight
// percent of the requests and records the effect. At 100, or on a route
// that nothing serves yet, it becomes the current instance, remembering the
// one it replaces (kept running for an undo). Below 100 it becomes the
// route's canary beside the current instance. It returns the route's other
// instances still running on this node that no undo needs, for the caller
// to stop.
func (s *Store) LocalInstanceActivate(ctx context.Context, id string, weight int, eff LocalEffect) (LocalActivation, []LocalInstance, error) {
	if weight < 0 || weight > 100 {
		return LocalActivation{}, nil, fmt.Errorf("%w: weight %d is not between 0 and 100", ErrInvalid, weight)
	}
	var act LocalActivation
	var stale []LocalInstance
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		inst, err := oneByName[LocalInstance](tx.Query(ctx, `SELECT * FROM local_instances WHERE id = $1 FOR UPDATE`, id))
		if err != nil {
			return err
		}
		// Locking the route serialises two deploys of one host: each sees
		// the other's result as its previous instance.
		var prev, canary *string
		err = tx.QueryRow(ctx, `SELECT instance_id, canary_id FROM local_routes WHERE host = $1 FOR UPDATE`, inst.Host).Scan(&prev, &canary)
		if err != nil {
			return fmt.Errorf("route %s: %w", inst.Host, interpretError(err))
		}
		if prev != nil && *prev == id {
			prev = nil
		}
		if canary != nil && *canary == id {
			canary = nil
		}
		if _, err := tx.Exec(ctx, `UPDATE local_instances SET state = 'running', previous_id = $2, updated_at = now() WHERE id = $1`, id, prev); err != nil {
			return interpretError(err)
		}
		act = LocalActivation{InstanceID: id, Host: inst.Host, Version: inst.Version, Port: inst.Port, PID: inst.PID, Weight: 100}
		if prev != nil {
			act.PreviousID = *prev
		}
		if weight < 100 && prev != nil {
			act.Canary, act.Weight = true, weight
			if _, err := tx.Exec(ctx, `UPDATE local_routes SET canary_id = $2, canary_weight = $3, updated_at = now() WHERE host = $1`, inst.Host, id, weight); err != nil {
				return interpretError(err)
			}
			// Only a canary this one replaces is stale: the current
			// instance serves the rest, its standby stays for its undo.
			if canary != nil {
				stale, err = byName[LocalInstance](tx.Query(ctx, `SELECT * FROM local_instances
					WHERE id = $1 AND node = $2 AND state = 'running'`, *canary, inst.Node))
				if err != nil {
					return err
				}
			}
			return localEffectRecord(ctx, tx, eff, act)
		}
		if _, err := tx.Exec(ctx, `UPDATE local_routes SET instance_id = $2, canary_id = NULL, canary_weight = 0, updated_at = now() WHERE host = $1`, inst.Host, id); err != nil {
			return interpretError(err)
		}
		stale, err = byName[LocalInstance](tx.Query(ctx, `SELECT * FROM local_instances
			WHERE host = $1 AND node = $2 AND state = 'running' AND id <> $3 AND id IS DISTINCT FROM $4::uuid`, inst.Host, inst.Node, id, prev))
		if err != nil {
			return err
		}
		return localEffectRecord(ctx, tx, eff, act)
	})
	return act, stale, err
}

// LocalStop is what instance_stop did; also its output.
type LocalStop struct {
	InstanceID string `json:"instance_id"`
	Host       string `json:"host"`
	Version    string `json:"version"`
	RestoredID string `json:"restored_id,omitempty"` // the instance made current again
}

// LocalInstanceStopped marks a stopped instance and records the effect.
func (s *Store) LocalInstanceStopped(ctx context.Context, stop LocalStop, eff LocalEffect) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE local_instances SET state = 'stopped', stopped_at = now(), updated_at = now() WHERE id = $1`, stop.InstanceID); err != nil {
			return interpretError(err)
		}
		return localEffectRecord(ctx, tx, eff, stop)
	})
}

// LocalInstanceListByNode lists the instances on node in one of states,
// oldest first (crash recovery).
func (s *Store) LocalInstanceListByNode(ctx context.Context, node string, states ...string) ([]LocalInstance, error) {
	return byName[LocalInstance](s.pool.Query(ctx, `SELECT * FROM local_instances
		WHERE node = $1 AND state = ANY($2) ORDER BY created_at`, node, states))
}

// LocalInstanceIsCurrent reports whether id is its route's current instance.
func (s *Store) LocalInstanceIsCurrent(ctx context.Context, id string) (bool, error) {
	var ok bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM local_routes WHERE instance_id = $1)`, id).Scan(&ok)
	return ok, interpretError(err)
}

// LocalInstanceReplaceProcess records a restarted process for an instance
// if its pid is still oldPID, and reports whether it did: of two processes
// restarting the same instance, one wins and the other stops its process.
func (s *Store) LocalInstanceReplaceProcess(ctx context.Context, id string, oldPID, pid, port int) (bool, error) {
	tag, err := s.pool.Exec(ctx, `
		UPDATE local_instances SET pid = $3, port = $4, state = 'running', stopped_at = NULL, updated_at = now()
		WHERE id = $1 AND pid = $2`, id, oldPID, pid, port)
	if err != nil {
		return false, interpretError(err)
	}
	return tag.RowsAffected() == 1, nil
}

// LocalInstanceListAbandoned lists node's instances still "starting" with
// no attempt touching them for longer than idle (by the database clock):
// starts whose worker died and whose task did not come back for them.
func (s *Store) LocalInstanceListAbandoned(ctx context.Context, node string, idle time.Duration) ([]LocalInstance, error) {
	return byName[LocalInstance](s.pool.Query(ctx, `SELECT * FROM local_instances
		WHERE node = $1 AND state = 'starting' AND updated_at < now() - make_interval(secs => $2) ORDER BY created_at`, node, idle.Seconds()))
}
