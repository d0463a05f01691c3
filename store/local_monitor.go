package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LocalMonitorChange is what monitor_create/monitor_delete did; also their
// output, which the undo reads back.
type LocalMonitorChange struct {
	Host       string `json:"host"`
	IntervalMS int    `json:"interval_ms"`
	Created    bool   `json:"created,omitempty"`
	Deleted    bool   `json:"deleted,omitempty"`
}

// LocalMonitorCreate adds a health monitor for team's host. An existing one
// of the same team is left as it is (Created false).
func (s *Store) LocalMonitorCreate(ctx context.Context, team, host string, interval time.Duration, eff LocalEffect) (LocalMonitorChange, error) {
	ch := LocalMonitorChange{Host: host, IntervalMS: int(interval.Milliseconds())}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		teamID, err := localTeamID(ctx, tx, team)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO local_monitors (team_id, host, interval_ms) VALUES ($1, $2, $3) ON CONFLICT (host) DO NOTHING`,
			teamID, host, ch.IntervalMS)
		if err != nil {
			return interpretError(err)
		}
		ch.Created = tag.RowsAffected() == 1
		var owner string
		var ms int32
		if err := tx.QueryRow(ctx, `SELECT team_id, interval_ms FROM local_monitors WHERE host = $1`, host).Scan(&owner, &ms); err != nil {
			return interpretError(err)
		}
		if owner != teamID {
			return fmt.Errorf("%w: host %s belongs to another team", ErrForbidden, host)
		}
		ch.IntervalMS = int(ms)
		return localEffectRecord(ctx, tx, eff, ch)
	})
	return ch, err
}

// LocalMonitorDelete removes team's monitor of host (its alerts stay, as
// history). A missing monitor is not an error (Deleted false).
func (s *Store) LocalMonitorDelete(ctx context.Context, team, host string, eff LocalEffect) (LocalMonitorChange, error) {
	ch := LocalMonitorChange{Host: host}
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		teamID, err := localTeamID(ctx, tx, team)
		if err != nil {
			return err
		}
		var ms int32
		err = tx.QueryRow(ctx, `DELETE FROM local_monitors WHERE host = $1 AND team_id = $2 RETURNING interval_ms`, host, teamID).Scan(&ms)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return interpretError(err)
		}
		if err == nil {
			ch.Deleted, ch.IntervalMS = true, int(ms)
			// A deleted monitor watches nothing: its open alert ends with it.
			if _, err := tx.Exec(ctx, `UPDATE local_alerts SET state = 'resolved', resolved_at = now()
				WHERE host = $1 AND team_id = $2 AND state = 'open'`, host, teamID); err != nil {
				return interpretError(err)
			}
		}
		return localEffectRecord(ctx, tx, eff, ch)
	})
	return ch, err
}

// LocalProbe is a monitor due for a check, with its route's target.
type LocalProbe struct {
	MonitorID string
	Host      string
	Target    LocalTarget // InstanceID "" when nothing serves the route
}

// LocalMonitorClaimDue takes up to limit monitors whose check is due and
// moves their next check one interval ahead, in one statement. SKIP LOCKED
// and the moved next_check_at keep several serve processes from probing the
// same monitor twice.
func (s *Store) LocalMonitorClaimDue(ctx context.Context, limit int) ([]LocalProbe, error) {
	rows, err := s.pool.Query(ctx, `
		WITH due AS (
			SELECT id FROM local_monitors WHERE next_check_at <= now()
			ORDER BY next_check_at LIMIT $1 FOR UPDATE SKIP LOCKED
		), claimed AS (
			UPDATE local_monitors m SET next_check_at = now() + make_interval(secs => m.interval_ms / 1000.0)
			FROM due WHERE m.id = due.id
			RETURNING m.id, m.host
		)
		SELECT c.id, c.host, i.id, i.port, i.node, i.version
		FROM claimed c
		LEFT JOIN local_routes r ON r.host = c.host
		LEFT JOIN local_instances i ON i.id = r.instance_id AND i.state = 'running'`, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []LocalProbe
	for rows.Next() {
		var p LocalProbe
		var id, node, version *string
		var port *int32
		if err := rows.Scan(&p.MonitorID, &p.Host, &id, &port, &node, &version); err != nil {
			return nil, interpretError(err)
		}
		if id != nil {
			p.Target = LocalTarget{InstanceID: *id, Port: int(*port), Node: *node, Version: *version}
		}
		out = append(out, p)
	}
	return out, interpretError(rows.Err())
}

// LocalMonitorRecord stores a probe's result: unhealthy opens an alert
// unless one is open (the partial unique index makes that race-free),
// healthy resolves the open one. It reports whether an alert opened or
// resolved.
func (s *Store) LocalMonitorRecord(ctx context.Context, monitorID string, healthy bool, message string) (changed bool, err error) {
	err = s.withTx(ctx, func(tx pgx.Tx) error {
		var teamID, host string
		err := tx.QueryRow(ctx, `UPDATE local_monitors SET healthy = $2, last_checked_at = now() WHERE id = $1 RETURNING team_id, host`,
			monitorID, healthy).Scan(&teamID, &host)
		if err != nil {
			return interpretError(err) // deleted meanwhile: ErrNotFound
		}
		var tag interface{ RowsAffected() int64 }
		if healthy {
			tag, err = tx.Exec(ctx, `UPDATE local_alerts SET state = 'resolved', resolved_at = now() WHERE monitor_id = $1 AND state = 'open'`, monitorID)
		} else {
			tag, err = tx.Exec(ctx, `INSERT INTO local_alerts (team_id, monitor_id, host, state, message) VALUES ($1, $2, $3, 'open', $4)
				ON CONFLICT (monitor_id) WHERE state = 'open' DO NOTHING`, teamID, monitorID, host, message)
		}
		if err != nil {
			return interpretError(err)
		}
		changed = tag.RowsAffected() > 0
		return nil
	})
	return changed, err
}

// LocalAlert is a row of local_alerts.
type LocalAlert struct {
	ID         string
	Host       string
	State      string // open | resolved
	Message    string
	OpenedAt   time.Time
	ResolvedAt *time.Time
}

// LocalAlertList lists the alerts of teamIDs, newest first; openOnly keeps
// the open ones.
func (s *Store) LocalAlertList(ctx context.Context, teamIDs []string, openOnly bool, limit int) ([]LocalAlert, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, host, state, message, opened_at, resolved_at FROM local_alerts
		WHERE team_id = ANY($1) AND (NOT $2 OR state = 'open') ORDER BY opened_at DESC, id LIMIT $3`, teamIDs, openOnly, limit)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []LocalAlert
	for rows.Next() {
		var a LocalAlert
		if err := rows.Scan(&a.ID, &a.Host, &a.State, &a.Message, &a.OpenedAt, &a.ResolvedAt); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, a)
	}
	return out, interpretError(rows.Err())
}

// LocalHostHealth is what the local provider knows of one host: whether a
// route serves it and what its monitor last found.
type LocalHostHealth struct {
	Host          string     `db:"host"`
	TeamID        string     `db:"team_id"`
	Serving       bool       `db:"serving"`         // a route sends requests to an instance
	Monitored     bool       `db:"monitored"`       // a monitor checks it
	Healthy       *bool      `db:"healthy"`         // nil: not checked yet
	LastCheckedAt *time.Time `db:"last_checked_at"` // the monitor's last check
	Alert         *string    `db:"alert"`           // the open alert's message
}

// LocalHealthList lists the hosts of teamIDs that have a route or a
// monitor, for the environments page to show beside each target. Both
// tables hold a row per deployed host, so this reads a handful of rows.
func (s *Store) LocalHealthList(ctx context.Context, teamIDs []string) ([]LocalHostHealth, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT coalesce(r.host, m.host) AS host, coalesce(r.team_id, m.team_id)::text AS team_id,
			r.instance_id IS NOT NULL AS serving, m.id IS NOT NULL AS monitored, m.healthy, m.last_checked_at, a.message AS alert
		FROM local_routes r
		FULL JOIN local_monitors m ON m.host = r.host AND m.team_id = r.team_id
		LEFT JOIN local_alerts a ON a.monitor_id = m.id AND a.state = 'open'
		WHERE coalesce(r.team_id, m.team_id) = ANY($1)
		ORDER BY 1`, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[LocalHostHealth])
	return out, interpretError(err)
}
