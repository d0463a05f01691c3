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

// taskRow is a task as reads select it: a task_reads row (migration
// 00037), or the claim's columns of the same names. Rows are scanned by
// column name (pgx.RowToStructByName), so a query lists what it reads in
// any order and a new column is a field here and a column there.
type taskRow struct {
	ID                string     `db:"id"`
	TeamID            string     `db:"team_id"`
	Team              string     `db:"team"`
	Kind              string     `db:"kind"`
	Pipeline          string     `db:"pipeline"`
	Params            []byte     `db:"params"`
	Prompt            string     `db:"prompt"`
	Priority          int16      `db:"priority"`
	State             string     `db:"state"`
	Attempt           int        `db:"attempt"`
	MaxAttempts       int        `db:"max_attempts"`
	CreatedBy         string     `db:"created_by"`
	CreatedByEmail    string     `db:"created_by_email"`
	CreatedAt         time.Time  `db:"created_at"`
	StartedAt         *time.Time `db:"started_at"`
	FinishedAt        *time.Time `db:"finished_at"`
	DeadlineAt        *time.Time `db:"deadline_at"`
	CancelRequested   bool       `db:"cancel_requested"`
	Error             *string    `db:"error"`
	Result            []byte     `db:"result"`
	LastSeq           int        `db:"last_seq"`
	ProgressStep      int        `db:"progress_step"`
	ProgressTotal     int        `db:"progress_total"`
	BlockedBy         *string    `db:"blocked_by"`
	RerunOf           *string    `db:"rerun_of"`
	PauseRequested    bool       `db:"pause_requested"`
	FailedStep        []byte     `db:"failed_step"`
	DecisionExpiresAt *time.Time `db:"decision_expires_at"`
	Environment       *string    `db:"environment"`
	RunAt             *time.Time `db:"run_at"`
	PromotedFrom      *string    `db:"promoted_from"`
	Override          []byte     `db:"override"`
}

// task makes the row a task.Task.
func (r *taskRow) task() (*task.Task, error) {
	t := task.Task{ID: r.ID, TeamID: r.TeamID, Team: r.Team, Kind: task.Kind(r.Kind), Pipeline: r.Pipeline,
		Params: json.RawMessage(r.Params), Prompt: r.Prompt, Priority: task.Priority(r.Priority), State: task.State(r.State),
		Attempt: r.Attempt, MaxAttempts: r.MaxAttempts, CreatedByID: r.CreatedBy, CreatedBy: r.CreatedByEmail,
		CreatedAt: r.CreatedAt.UTC(), StartedAt: utcPtr(r.StartedAt), FinishedAt: utcPtr(r.FinishedAt),
		DeadlineAt: utcPtr(r.DeadlineAt), CancelRequested: r.CancelRequested, Error: r.Error, LastSeq: r.LastSeq,
		Progress: task.Progress{Step: r.ProgressStep, TotalStep: r.ProgressTotal}, BlockedBy: r.BlockedBy,
		RerunOf: r.RerunOf, PauseRequested: r.PauseRequested, DecisionExpiresAt: utcPtr(r.DecisionExpiresAt),
		RunAt: utcPtr(r.RunAt), PromotedFrom: r.PromotedFrom}
	if r.Environment != nil {
		t.Environment = *r.Environment
	}
	if len(r.Override) > 0 {
		t.Override = json.RawMessage(r.Override)
	}
	if len(r.Result) > 0 {
		t.Result = json.RawMessage(r.Result)
	}
	if len(r.FailedStep) > 0 {
		t.FailedStep = new(task.FailedStep)
		if err := json.Unmarshal(r.FailedStep, t.FailedStep); err != nil {
			return nil, fmt.Errorf("error reading the failed step of task %s: %w", t.ID, err)
		}
	}
	if t.Progress.TotalStep > 0 {
		t.Progress.Percent = min(100, 100*t.Progress.Step/t.Progress.TotalStep)
	}
	return &t, nil
}

// collectTasks scans task_reads rows by name.
func collectTasks(rows pgx.Rows) ([]*task.Task, error) {
	trs, err := pgx.CollectRows(rows, pgx.RowToStructByName[taskRow])
	if err != nil {
		return nil, interpretError(err)
	}
	out := make([]*task.Task, len(trs))
	for i := range trs {
		if out[i], err = trs[i].task(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

func utc(t *time.Time) { *t = t.UTC() }

// TaskGet loads a task visible to one of teamIDs; any other is ErrNotFound,
// so another team's task does not exist for the caller.
func (s *Store) TaskGet(ctx context.Context, teamIDs []string, id string) (*task.Task, error) {
	if !validUUID(id) {
		return nil, ErrNotFound
	}
	rows, err := s.pool.Query(ctx, `SELECT * FROM task_reads WHERE id = $1 AND team_id = ANY($2)`, id, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	ts, err := collectTasks(rows)
	if err != nil {
		return nil, err
	}
	if len(ts) == 0 {
		return nil, ErrNotFound
	}
	return ts[0], nil
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
	rows, err := s.pool.Query(ctx, `SELECT t.* FROM task_reads t
		JOIN unnest($1::uuid[]) WITH ORDINALITY AS want(id, ord) ON want.id = t.id
		WHERE t.team_id = ANY($2) ORDER BY want.ord`, valid, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	return collectTasks(rows)
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
		SELECT r.* FROM (SELECT DISTINCT unnest($1::uuid[]) AS id) team CROSS JOIN unnest($2::text[]) AS st(state)
		CROSS JOIN LATERAL (
			SELECT t.id FROM tasks t
			WHERE t.team_id = team.id AND t.state = st.state
				AND ($3::text = '' OR t.kind = $3)
				AND ($4::text = '' OR t.pipeline = $4)
				AND ($5::text = '' OR t.created_by IN (SELECT id FROM users WHERE email = $5))
				AND ($6::smallint = 0 OR t.priority = $6)
				-- no bound from derived state (the rollups): a task the fold
				-- has not counted yet is listed all the same
				AND ($7::timestamptz = '-infinity' OR t.finished_at >= $7)
				AND ($8::timestamptz = 'infinity' OR t.finished_at < $8)
				AND (t.created_at, t.id) < ($9::timestamptz, $10::uuid)
			ORDER BY t.created_at DESC, t.id DESC LIMIT $11) t
		JOIN task_reads r ON r.id = t.id
		ORDER BY r.created_at DESC, r.id DESC LIMIT $11`,
		p.TeamIDs, states, p.Kind, p.Pipeline, p.CreatedBy, int16(p.Priority), finishedAfter, finishedBefore,
		before.At, before.ID, limit+1)
	if err != nil {
		return nil, "", interpretError(err)
	}
	out, err := collectTasks(rows)
	if err != nil {
		return nil, "", err
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
