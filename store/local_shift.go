package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// ErrNoCanary: a traffic shift on a route that has no canary.
var ErrNoCanary = errors.New("no canary")

// LocalShift is what a traffic shift did; also local.traffic_shift's
// output, from which its undo puts the route back (contract §11).
type LocalShift struct {
	Host     string `json:"host"`
	CanaryID string `json:"canary_id"`
	Version  string `json:"version"` // the canary's
	Weight   int    `json:"weight"`
	// Promoted: at 100 the canary became the current instance.
	Promoted bool `json:"promoted,omitempty"`
	// What the route was before the step: its undo restores it.
	PreviousWeight    int    `json:"previous_weight"`
	PreviousCurrentID string `json:"previous_current_id,omitempty"`
}

// LocalTrafficShift sets the share of team's route host that its canary
// receives. At 100 the canary becomes the current instance (the one it
// replaces keeps running, for an undo). A route without a canary fails with
// ErrNoCanary; a route of another team is ErrForbidden.
func (s *Store) LocalTrafficShift(ctx context.Context, team, host string, weight int, eff LocalEffect) (LocalShift, error) {
	sh := LocalShift{Host: host, Weight: weight}
	if weight < 0 || weight > 100 {
		return sh, fmt.Errorf("%w: weight %d is not between 0 and 100", ErrInvalid, weight)
	}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		teamID, err := localTeamID(ctx, tx, team)
		if err != nil {
			return err
		}
		var owner string
		var cur, canary *string
		err = tx.QueryRow(ctx, `SELECT team_id, instance_id, canary_id, canary_weight FROM local_routes WHERE host = $1 FOR UPDATE`, host).
			Scan(&owner, &cur, &canary, &sh.PreviousWeight)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: no route %s", ErrNotFound, host)
		case err != nil:
			return interpretError(err)
		case owner != teamID:
			return fmt.Errorf("%w: host %s belongs to another team", ErrForbidden, host)
		case canary == nil:
			return fmt.Errorf("%w on route %s: start one with local.instance_start and a weight below 100 first", ErrNoCanary, host)
		}
		sh.CanaryID = *canary
		if cur != nil {
			sh.PreviousCurrentID = *cur
		}
		if err := tx.QueryRow(ctx, `SELECT version FROM local_instances WHERE id = $1`, *canary).Scan(&sh.Version); err != nil {
			return interpretError(err)
		}
		if weight == 100 {
			sh.Promoted = true
			_, err = tx.Exec(ctx, `UPDATE local_routes SET instance_id = canary_id, canary_id = NULL, canary_weight = 0, updated_at = now() WHERE host = $1`, host)
		} else {
			_, err = tx.Exec(ctx, `UPDATE local_routes SET canary_weight = $2, updated_at = now() WHERE host = $1`, host, weight)
		}
		if err != nil {
			return interpretError(err)
		}
		return localEffectRecord(ctx, tx, eff, sh)
	})
	return sh, err
}

// LocalTrafficRestore puts host back as sh found it (the undo of a shift):
// the same canary with the previous share, and the previous current
// instance. A route gone since is left alone.
func (s *Store) LocalTrafficRestore(ctx context.Context, sh LocalShift, eff LocalEffect) error {
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var cur, canary *string
		if sh.PreviousCurrentID != "" {
			cur = &sh.PreviousCurrentID
		}
		if sh.CanaryID != "" {
			canary = &sh.CanaryID
		}
		_, err := tx.Exec(ctx, `UPDATE local_routes SET instance_id = (SELECT id FROM local_instances WHERE id = $2),
			canary_id = (SELECT id FROM local_instances WHERE id = $3), canary_weight = $4, updated_at = now() WHERE host = $1`,
			sh.Host, cur, canary, sh.PreviousWeight)
		if err != nil {
			return interpretError(err)
		}
		return localEffectRecord(ctx, tx, eff, sh)
	})
}

// LocalRouteDropCanary takes instance id off host as its canary (the undo
// of a canary's start): the current instance serves everything again.
func (s *Store) LocalRouteDropCanary(ctx context.Context, host, id string) error {
	_, err := s.pool.Exec(ctx, `UPDATE local_routes SET canary_id = NULL, canary_weight = 0, updated_at = now()
		WHERE host = $1 AND canary_id = $2`, host, id)
	return interpretError(err)
}

// LocalCanary is a route with a canary, for the environments page.
type LocalCanary struct {
	Host    string `db:"host"`
	Version string `db:"version"`
	Weight  int    `db:"canary_weight"`
}

// LocalCanaryList lists team's routes that have a canary running.
func (s *Store) LocalCanaryList(ctx context.Context, teamID string) ([]LocalCanary, error) {
	if !validUUID(teamID) {
		return nil, nil
	}
	return byName[LocalCanary](s.pool.Query(ctx, `SELECT r.host, i.version, r.canary_weight::int AS canary_weight
		FROM local_routes r JOIN local_instances i ON i.id = r.canary_id AND i.state = 'running'
		WHERE r.team_id = $1 ORDER BY r.host`, teamID))
}

// LocalInstanceListReplaced lists node's running instances that a shift to
// 100 replaced in a task that has completed, and that no route serves
// again: no undo can return to them any more.
func (s *Store) LocalInstanceListReplaced(ctx context.Context, node string) ([]LocalInstance, error) {
	return byName[LocalInstance](s.pool.Query(ctx, `SELECT i.* FROM local_instances i
		WHERE i.node = $1 AND i.state = 'running'
			AND EXISTS (SELECT 1 FROM local_effects e JOIN tasks t ON t.id = e.task_id AND t.state = 'completed'
				WHERE e.action = 'local.traffic_shift' AND e.output->>'promoted' = 'true'
					AND e.output->>'previous_current_id' = i.id::text)
			AND NOT EXISTS (SELECT 1 FROM local_routes r WHERE r.instance_id = i.id OR r.canary_id = i.id)`, node))
}
