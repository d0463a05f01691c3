package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// Freeze is a freeze of a team's environment made through the API.
type Freeze struct {
	ID          string     `json:"id" db:"id"`
	TeamID      string     `json:"-" db:"team_id"`
	Environment string     `json:"environment" db:"environment"`
	From        time.Time  `json:"from" db:"from_at"`
	Until       time.Time  `json:"until" db:"until_at"`
	Reason      string     `json:"reason" db:"reason"`
	CreatedBy   string     `json:"created_by" db:"created_by"`
	EndedAt     *time.Time `json:"-" db:"ended_at"`
}

func (f *Freeze) utc() {
	f.From, f.Until = f.From.UTC(), f.Until.UTC()
}

// FreezeCreateParams are a new freeze.
type FreezeCreateParams struct {
	TeamID      string
	Environment string
	Until       time.Time
	Reason      string
	Actor       string // email
}

// FreezeCreate freezes a team's environment from now until p.Until and
// audits it, in one transaction. An until not after now is ErrConflict.
func (s *Store) FreezeCreate(ctx context.Context, p FreezeCreateParams) (*Freeze, error) {
	var out *Freeze
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			INSERT INTO freezes (team_id, environment, until_at, reason, created_by)
			SELECT $1, $2, $3, $4, $5 WHERE $3 > now()
			RETURNING id, team_id, environment, from_at, until_at, reason, created_by, ended_at`,
			p.TeamID, p.Environment, p.Until, p.Reason, p.Actor)
		if err != nil {
			return interpretError(err)
		}
		fs, err := pgx.CollectRows(rows, pgx.RowToStructByName[Freeze])
		if err != nil {
			return interpretError(err)
		}
		if len(fs) == 0 {
			return fmt.Errorf("%w: until is not in the future", ErrConflict)
		}
		out = &fs[0]
		out.utc()
		return auditAddTx(ctx, tx, p.TeamID, p.Actor, "freeze.created", "", map[string]any{
			"freeze_id": out.ID, "environment": out.Environment, "until": out.Until, "reason": out.Reason})
	})
	return out, err
}

// FreezeList returns the freezes of teamIDs that have not ended by after,
// by start; env "" for every environment.
func (s *Store) FreezeList(ctx context.Context, teamIDs []string, env string, after time.Time) ([]Freeze, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, team_id, environment, from_at, until_at, reason, created_by, ended_at FROM freezes
		WHERE team_id = ANY($1) AND ended_at IS NULL AND until_at > $3 AND ($2 = '' OR environment = $2)
		ORDER BY from_at, id LIMIT 1000`, teamIDs, env, after)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Freeze])
	if err != nil {
		return nil, interpretError(err)
	}
	for i := range out {
		out[i].utc()
	}
	return out, nil
}

// FreezeEnd ends a team's freeze now (ErrNotFound for another team's or
// an unknown one, ErrConflict when it already ended) and audits it. The
// deploys of that environment it held (parked until its end, no step
// started) become due now: the check before their first step decides
// afresh whether anything else still holds them.
func (s *Store) FreezeEnd(ctx context.Context, teamIDs []string, id, actor string) (*Freeze, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	var out *Freeze
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT id, team_id, environment, from_at, until_at, reason, created_by, ended_at FROM freezes
			WHERE id = $1 AND team_id = ANY($2) FOR UPDATE`, id, teamIDs)
		if err != nil {
			return interpretError(err)
		}
		f, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Freeze])
		if err != nil {
			return interpretError(err)
		}
		if f.EndedAt != nil {
			return fmt.Errorf("%w: the freeze already ended", ErrConflict)
		}
		var ended bool
		if err := tx.QueryRow(ctx, `SELECT until_at <= now() FROM freezes WHERE id = $1`, id).Scan(&ended); err != nil {
			return interpretError(err)
		}
		if ended {
			return fmt.Errorf("%w: the freeze already ended", ErrConflict)
		}
		heldUntil := f.Until // the end the tasks it held wait for
		if err := tx.QueryRow(ctx, `UPDATE freezes SET ended_at = now(), ended_by = $2,
			until_at = GREATEST(from_at + interval '1 microsecond', LEAST(until_at, now())) WHERE id = $1
			RETURNING until_at, ended_at`, id, actor).Scan(&f.Until, &f.EndedAt); err != nil {
			return interpretError(err)
		}
		// the tasks it held run now, through the one write path with
		// their event (invariant 6)
		rows, err = tx.Query(ctx, `
			SELECT t.id::text FROM tasks t
			WHERE t.team_id = $1 AND t.environment = $2 AND t.state = 'scheduled' AND t.held_until = $3
			ORDER BY t.id FOR UPDATE OF t`,
			f.TeamID, f.Environment, heldUntil)
		if err != nil {
			return interpretError(err)
		}
		held, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return interpretError(err)
		}
		if len(held) > 0 {
			data, _ := json.Marshal(map[string]any{"freeze_id": f.ID, "by": actor})
			ws := make([]TaskWrite, len(held))
			for i, id := range held {
				ws[i] = TaskWrite{ID: id, HeldUntil: f.EndedAt, Events: []task.Event{{Type: task.EventTaskState, Status: task.StatusLog,
					Message: fmt.Sprintf("The freeze of %s was ended by %s: the task runs now", f.Environment, actor), Data: data}}}
			}
			if _, err := taskApplyTx(ctx, tx, ws...); err != nil {
				return err
			}
		}
		f.utc()
		out = &f
		return auditAddTx(ctx, tx, f.TeamID, actor, "freeze.ended", "", map[string]any{
			"freeze_id": f.ID, "environment": f.Environment, "until": f.Until, "reason": f.Reason})
	})
	return out, err
}

// FreezesActiveAt returns the team's freezes of env that hold at the
// given time or start within horizon after it (the submit's and the
// saga's freeze check).
func (s *Store) FreezesActiveAt(ctx context.Context, teamID, env string, at time.Time, horizon time.Duration) ([]Freeze, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT id, team_id, environment, from_at, until_at, reason, created_by, ended_at FROM freezes
		WHERE team_id = $1 AND environment = $2 AND ended_at IS NULL AND until_at > $3 AND from_at <= $3 + make_interval(secs => $4)
		ORDER BY from_at, id LIMIT 100`, teamID, env, at, horizon.Seconds())
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Freeze])
	if err != nil {
		return nil, interpretError(err)
	}
	for i := range out {
		out[i].utc()
	}
	return out, nil
}

// TaskVersionCompletedAt is when a deploy of pipeline to the target with
// targetKey whose param versionParam is version last completed for the
// team; nil when none did (the promotion gate).
func (s *Store) TaskVersionCompletedAt(ctx context.Context, teamID, pipeline, targetKey, versionParam, version string) (*time.Time, error) {
	var at *time.Time
	err := s.pool.QueryRow(ctx, `
		SELECT max(finished_at) FROM tasks
		WHERE team_id = $1 AND pipeline = $2 AND target_key = $3 AND state = 'completed' AND params ->> $4 = $5`,
		teamID, pipeline, targetKey, versionParam, version).Scan(&at)
	if err != nil {
		return nil, interpretError(err)
	}
	if at != nil {
		utc(at)
	}
	return at, nil
}

// marshalDetail is data as audit detail JSON ({} for nil).
func marshalDetail(data any) []byte {
	if data == nil {
		return []byte("{}")
	}
	if raw, ok := data.(json.RawMessage); ok && len(raw) > 0 {
		return raw
	}
	b, err := json.Marshal(data)
	if err != nil || string(b) == "null" {
		return []byte("{}")
	}
	return b
}
