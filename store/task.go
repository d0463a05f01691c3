package store

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"flightdeck/workflow/task"
)

// taskColumns are read by scanTask; the FROM must alias tasks t, teams tm and users u.
const taskColumns = `t.id, t.team_id, tm.name, t.kind, t.pipeline, t.params, t.prompt, t.priority, t.state,
	t.attempt, t.max_attempts, t.created_by, u.email, t.created_at, t.started_at, t.finished_at, t.deadline_at,
	t.cancel_requested_at IS NOT NULL, t.error, t.result, t.last_seq, t.progress_step, t.progress_total,
	(SELECT h.task_id FROM concurrency_holds h
		WHERE t.state = 'pending' AND h.team_id = t.team_id AND h.key = t.concurrency_key AND h.task_id <> t.id),
	t.rerun_of, t.pause_requested_at IS NOT NULL AND t.state IN ('running', 'pending'), t.failed_step, t.decision_expires_at,
	t.environment, CASE WHEN t.state = 'scheduled' THEN t.run_after END, t.promoted_from, t.override`

const taskFrom = `FROM tasks t JOIN teams tm ON tm.id = t.team_id JOIN users u ON u.id = t.created_by`

func scanTask(row pgx.Row) (*task.Task, error) { return scanTaskWith(row, nil) }

// scanTaskWith scans taskColumns followed by the columns extra points into.
func scanTaskWith(row pgx.Row, extra func(*task.Task) []any) (*task.Task, error) {
	var t task.Task
	var params, result, failedStep, override []byte
	var kind, state string
	var env *string
	var prio int16
	dest := make([]any, 0, 44) // room for extra's columns: one allocation
	dest = append(dest, &t.ID, &t.TeamID, &t.Team, &kind, &t.Pipeline, &params, &t.Prompt, &prio, &state,
		&t.Attempt, &t.MaxAttempts, &t.CreatedByID, &t.CreatedBy, &t.CreatedAt, &t.StartedAt, &t.FinishedAt,
		&t.DeadlineAt, &t.CancelRequested, &t.Error, &result, &t.LastSeq, &t.Progress.Step, &t.Progress.TotalStep, &t.BlockedBy, &t.RerunOf,
		&t.PauseRequested, &failedStep, &t.DecisionExpiresAt, &env, &t.RunAt, &t.PromotedFrom, &override)
	if extra != nil {
		dest = append(dest, extra(&t)...)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, interpretError(err)
	}
	t.Kind, t.State, t.Priority = task.Kind(kind), task.State(state), task.Priority(prio)
	t.Params = json.RawMessage(params)
	if env != nil {
		t.Environment = *env
	}
	if len(override) > 0 {
		t.Override = json.RawMessage(override)
	}
	if len(result) > 0 {
		t.Result = json.RawMessage(result)
	}
	if len(failedStep) > 0 {
		t.FailedStep = new(task.FailedStep)
		if err := json.Unmarshal(failedStep, t.FailedStep); err != nil {
			return nil, fmt.Errorf("error reading the failed step of task %s: %w", t.ID, err)
		}
	}
	if t.Progress.TotalStep > 0 {
		t.Progress.Percent = min(100, 100*t.Progress.Step/t.Progress.TotalStep)
	}
	utc(&t.CreatedAt)
	for _, p := range []*time.Time{t.StartedAt, t.FinishedAt, t.DeadlineAt, t.DecisionExpiresAt, t.RunAt} {
		if p != nil {
			utc(p)
		}
	}
	return &t, nil
}

func utc(t *time.Time) { *t = t.UTC() }

// TaskGet loads a task visible to one of teamIDs; any other is ErrNotFound,
// so another team's task does not exist for the caller.
func (s *Store) TaskGet(ctx context.Context, teamIDs []string, id string) (*task.Task, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	row := s.pool.QueryRow(ctx, `SELECT `+taskColumns+` `+taskFrom+` WHERE t.id = $1 AND t.team_id = ANY($2)`, id, teamIDs)
	return scanTask(row)
}

// TaskGetMany loads the tasks of ids that belong to one of teamIDs, in the
// order of ids; unknown, malformed and other teams' ids are left out. One
// query for a whole batch: the team feed loads each change once per process
// with it, however many sockets watch.
func (s *Store) TaskGetMany(ctx context.Context, teamIDs, ids []string) ([]*task.Task, error) {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if validUUID(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 || len(teamIDs) == 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT `+taskColumns+` `+taskFrom+`
		JOIN unnest($1::uuid[]) WITH ORDINALITY AS want(id, ord) ON want.id = t.id
		WHERE t.team_id = ANY($2) ORDER BY want.ord`, valid, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []*task.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, interpretError(err)
	}
	return out, nil
}

// TaskSecretParams returns the real values of a task's secret params
// (tasks.secret_params), or nil when it has none (also a task stored before
// they were kept apart, whose params still hold them). It is for workers
// that must run with them, such as an agent's rollback repeating an earlier
// deploy: never show what it returns. Another team's task is ErrNotFound.
func (s *Store) TaskSecretParams(ctx context.Context, teamIDs []string, id string) (json.RawMessage, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	var secret []byte
	err := s.pool.QueryRow(ctx, `SELECT secret_params FROM tasks WHERE id = $1 AND team_id = ANY($2)`, id, teamIDs).Scan(&secret)
	if err != nil {
		return nil, fmt.Errorf("error reading secret params: %w", interpretError(err))
	}
	if len(secret) == 0 {
		return nil, nil
	}
	return json.RawMessage(secret), nil
}

// TaskListParams filter TaskList. Empty fields do not filter.
type TaskListParams struct {
	TeamIDs   []string // required: the caller's teams
	State     string
	Kind      string
	Pipeline  string
	CreatedBy string        // email
	Priority  task.Priority // 0: any
	// FinishedAfter and FinishedBefore bound finished_at (zero: unbounded;
	// after is inclusive, before exclusive).
	FinishedAfter, FinishedBefore time.Time
	Before                        string // cursor from a previous page
	Limit                         int    // default 50, at most 200
}

// TaskList returns tasks newest first, and the cursor of the next page (""
// when there is none). The cursor is the last row's (created_at, id).
//
// Each of the caller's teams and each state (or the one filtered) is read
// apart, newest first, from tasks_team_id_state_created_at_idx, at most a
// page each, and the pieces are merged: every piece is an index range scan
// however deep the history or the paging goes, and tasks need no second
// index by team and time (one entry fewer written per task change). A
// single scan over "team_id = ANY(…)" cannot return rows in time order,
// so it read and sorted the teams' whole history instead.
func (s *Store) TaskList(ctx context.Context, p TaskListParams) ([]*task.Task, string, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 200)
	states := make([]string, 0, len(task.States))
	if p.State != "" {
		states = append(states, p.State)
	} else {
		for _, st := range task.States {
			states = append(states, string(st))
		}
	}
	// One literal for every filter: an unset filter is a value that matches
	// every task ("", 0, ±infinity, the largest cursor), so the plan does
	// not depend on which are set. Bounds on created_at are index bounds of
	// each piece's scan, the rest filter its rows. The scan starts below one
	// (created_at, id): the page's cursor or, when lower, finished_before (a
	// task is created before it finishes). One start, since PostgreSQL does
	// not merge a row comparison with another bound on created_at and may
	// start the scan at the looser one.
	before := listCursor{At: pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}, ID: maxUUID}
	if p.Before != "" {
		at, id, err := decodeCursor(p.Before)
		if err != nil {
			return nil, "", err
		}
		before = listCursor{At: pgtype.Timestamptz{Time: at, Valid: true}, ID: id}
	}
	finishedBefore := pgtype.Timestamptz{InfinityModifier: pgtype.Infinity, Valid: true}
	if !p.FinishedBefore.IsZero() {
		finishedBefore = pgtype.Timestamptz{Time: p.FinishedBefore, Valid: true}
		if before.At.InfinityModifier == pgtype.Infinity || !p.FinishedBefore.After(before.At.Time) {
			before = listCursor{At: finishedBefore, ID: minUUID}
		}
	}
	finishedAfter := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	if !p.FinishedAfter.IsZero() {
		finishedAfter = pgtype.Timestamptz{Time: p.FinishedAfter, Valid: true}
	}
	rows, err := s.pool.Query(ctx, `
		SELECT `+taskColumns+`
		FROM (SELECT DISTINCT unnest($1::uuid[]) AS id) team CROSS JOIN unnest($2::text[]) AS st(state)
		CROSS JOIN LATERAL (
			SELECT * FROM tasks t
			WHERE t.team_id = team.id AND t.state = st.state
				AND ($3::text = '' OR t.kind = $3)
				AND ($4::text = '' OR t.pipeline = $4)
				AND ($5::text = '' OR t.created_by IN (SELECT id FROM users WHERE email = $5))
				AND ($6::smallint = 0 OR t.priority = $6)
				AND ($7::timestamptz = '-infinity' OR t.finished_at >= $7)
				-- tasks that ended since $7 were created since the earliest
				-- creation the rollups of those days record: the scan ends
				-- there instead of at the start of the history
				AND t.created_at >= CASE WHEN $7 = '-infinity' THEN '-infinity' ELSE (
					SELECT coalesce(min(r.created_min), 'infinity') FROM task_rollups r
					WHERE r.team_id = team.id AND r.day >= ($7 AT TIME ZONE 'UTC')::date) END
				AND ($8::timestamptz = 'infinity' OR t.finished_at < $8)
				AND (t.created_at, t.id) < ($9::timestamptz, $10::uuid)
			ORDER BY t.created_at DESC, t.id DESC LIMIT $11) t
		JOIN teams tm ON tm.id = t.team_id JOIN users u ON u.id = t.created_by
		ORDER BY t.created_at DESC, t.id DESC LIMIT $11`,
		p.TeamIDs, states, p.Kind, p.Pipeline, p.CreatedBy, int16(p.Priority), finishedAfter, finishedBefore,
		before.At, before.ID, limit+1)
	if err != nil {
		return nil, "", interpretError(err)
	}
	defer rows.Close()
	var out []*task.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, "", err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, "", interpretError(err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		last := out[limit-1]
		next = encodeCursor(last.CreatedAt, last.ID)
	}
	return out, next, nil
}

// listCursor is where a list page starts: below this (created_at, id).
type listCursor struct {
	At pgtype.Timestamptz
	ID string
}

// maxUUID sorts after every task id (the cursor of a first page), minUUID
// before every one.
const (
	maxUUID = "ffffffff-ffff-ffff-ffff-ffffffffffff"
	minUUID = "00000000-0000-0000-0000-000000000000"
)

// ErrBadCursor: a pagination cursor that this store did not hand out.
var ErrBadCursor = fmt.Errorf("invalid cursor")

func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(at.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return time.Time{}, "", ErrBadCursor
	}
	ts, id, ok := strings.Cut(string(b), "|")
	at, err := time.Parse(time.RFC3339Nano, ts)
	if !ok || err != nil || !validUUID(id) {
		return time.Time{}, "", ErrBadCursor
	}
	return at, id, nil
}

// validUUID checks the textual form so a malformed id is "not found" rather
// than a database error.
func validUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
				return false
			}
		}
	}
	return true
}
