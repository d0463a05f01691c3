package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// AgentState is an agent task's persisted loop state. The JSON columns are
// owned by workflow/agent; the store only keeps them.
// Rows are scanned by column name (SELECT *: a new column is a field here).
type AgentState struct {
	TaskID        string          `db:"task_id"`
	Goal          string          `db:"goal"`
	Iteration     int             `db:"iteration"`
	Budgets       json.RawMessage `db:"budgets"`
	Spend         json.RawMessage `db:"spend"`
	Plan          json.RawMessage `db:"plan"`
	Facts         json.RawMessage `db:"facts"`
	OpenQuestions json.RawMessage `db:"open_questions"`
	RiskFlags     json.RawMessage `db:"risk_flags"`
	Messages      json.RawMessage `db:"messages"`
	Loop          json.RawMessage `db:"loop"`
	UpdatedAt     time.Time       `db:"updated_at"`
}

// AgentStateGet returns a task's agent state, or ErrNotFound before its first step.
func (s *Store) AgentStateGet(ctx context.Context, taskID string) (*AgentState, error) {
	return oneByName[AgentState](s.pool.Query(ctx, `SELECT * FROM agent_states WHERE task_id = $1`, taskID))
}

// AgentStateView returns a visible task's agent state (team-scoped, for pages).
func (s *Store) AgentStateView(ctx context.Context, teamIDs []string, taskID string) (*AgentState, error) {
	if !validUUID(taskID) {
		return nil, ErrNotFound
	}
	return oneByName[AgentState](s.pool.Query(ctx, `SELECT a.* FROM agent_states a
		WHERE task_id = $1 AND EXISTS (SELECT 1 FROM tasks t WHERE t.id = a.task_id AND t.team_id = ANY($2))`, taskID, teamIDs))
}

func jsonOr(b json.RawMessage, def string) []byte {
	if len(b) == 0 || string(b) == "null" {
		return []byte(def)
	}
	return b
}

// Question is an agent's question to a person.
// An agent_questions row, scanned by column name (SELECT *, RETURNING *).
type Question struct {
	ID         string     `json:"id" db:"id"`
	TaskID     string     `json:"-" db:"task_id"`
	TeamID     string     `json:"-" db:"team_id"`
	CallSeq    int        `json:"-" db:"call_seq"`
	Text       string     `json:"text" db:"text"`
	State      string     `json:"state" db:"state"`
	Answer     *string    `json:"answer" db:"answer"`
	AnsweredBy *string    `json:"answered_by" db:"answered_by"`
	AskedAt    time.Time  `json:"asked_at" db:"asked_at"`
	AnsweredAt *time.Time `json:"answered_at,omitempty" db:"answered_at"`
}

// questionOne reads the one agent_questions row a Query returns (none is ErrNotFound).
func questionOne(rows pgx.Rows, err error) (*Question, error) {
	q, err := oneByName[Question](rows, err)
	if err != nil {
		return nil, err
	}
	q.AskedAt = q.AskedAt.UTC()
	return q, nil
}

// AgentQuestionGet returns the question asked by a task's tool call.
func (s *Store) AgentQuestionGet(ctx context.Context, taskID string, callSeq int) (*Question, error) {
	return questionOne(s.pool.Query(ctx, `SELECT * FROM agent_questions WHERE task_id = $1 AND call_seq = $2`, taskID, callSeq))
}

// AgentQuestionList returns a visible task's questions, oldest first.
func (s *Store) AgentQuestionList(ctx context.Context, teamIDs []string, taskID string) ([]Question, error) {
	rows, err := s.pool.Query(ctx, `SELECT * FROM agent_questions
		WHERE task_id = $1 AND team_id = ANY($2) ORDER BY asked_at, call_seq`, taskID, teamIDs)
	if err != nil {
		return nil, interpretError(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByName[Question])
	if err != nil {
		return nil, interpretError(err)
	}
	for i := range out {
		out[i].AskedAt = out[i].AskedAt.UTC()
	}
	if out == nil {
		out = []Question{}
	}
	return out, nil
}

// AgentQuestionAnswerParams are a person's answer.
type AgentQuestionAnswerParams struct {
	TeamIDs    []string
	TaskID     string
	QuestionID string
	Text       string
	Actor      string // email
}

// AgentQuestionAnswer records exactly one answer: the task row is locked,
// the question must be pending and the task awaiting input (else
// ErrConflict). The task goes back to pending and a worker resumes it.
func (s *Store) AgentQuestionAnswer(ctx context.Context, p AgentQuestionAnswerParams) (*Question, error) {
	if !validUUID(p.TaskID) || !validUUID(p.QuestionID) {
		return nil, ErrNotFound
	}
	var out *Question
	err := s.withTx(ctx, func(tx pgx.Tx) error {
		var state, teamID string
		if err := tx.QueryRow(ctx, `SELECT state, team_id FROM tasks WHERE id = $1 AND team_id = ANY($2) FOR UPDATE`,
			p.TaskID, p.TeamIDs).Scan(&state, &teamID); err != nil {
			return interpretError(err)
		}
		q, err := questionOne(tx.Query(ctx, `SELECT * FROM agent_questions WHERE id = $1 AND task_id = $2 FOR UPDATE`,
			p.QuestionID, p.TaskID))
		if err != nil {
			return err
		}
		if q.State != "pending" || state != string(task.StateAwaitingInput) {
			return fmt.Errorf("%w: question is %s", ErrConflict, q.State)
		}
		q, err = questionOne(tx.Query(ctx, `UPDATE agent_questions SET state = 'answered', answer = $2, answered_by = $3, answered_at = now()
			WHERE id = $1 RETURNING *`, q.ID, p.Text, p.Actor))
		if err != nil {
			return err
		}
		data, _ := json.Marshal(map[string]any{"question_id": q.ID, "by": p.Actor})
		stateData, _ := json.Marshal(map[string]any{"state": task.StatePending})
		if err := appendStateEvents(ctx, tx, p.TaskID, stateChange{State: task.StatePending}, []task.Event{
			{Type: task.EventTaskState, Status: task.StatusLog, Message: p.Actor + " answered the agent's question", Data: data},
			{Type: task.EventTaskState, Status: task.StatusLog, Message: "Task pending", Data: stateData},
		}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO audit_log (team_id, actor, action, target, data) VALUES ($1, $2, 'question.answered', $3, $4)`,
			teamID, p.Actor, p.TaskID, data); err != nil {
			return interpretError(err)
		}
		noteTx(tx, readyNote)
		out = q
		return nil
	})
	return out, err
}

// AgentNote is a person's note to a running agent.
type AgentNote struct {
	ID     int64
	Author string
	Text   string
}

// AgentNoteAdd adds a note to a visible agent task that has not ended
// (ErrTerminal otherwise; ErrConflict for a deploy task). The agent reads it
// at its next iteration.
func (s *Store) AgentNoteAdd(ctx context.Context, teamIDs []string, taskID, author, text string) error {
	if !validUUID(taskID) {
		return ErrNotFound
	}
	return s.withTx(ctx, func(tx pgx.Tx) error {
		var state, kind string
		if err := tx.QueryRow(ctx, `SELECT state, kind FROM tasks WHERE id = $1 AND team_id = ANY($2) FOR SHARE`, taskID, teamIDs).
			Scan(&state, &kind); err != nil {
			return interpretError(err)
		}
		if kind != string(task.KindAgent) {
			return fmt.Errorf("%w: notes are for agent tasks", ErrConflict)
		}
		if task.State(state).Terminal() {
			return ErrTerminal
		}
		_, err := tx.Exec(ctx, `INSERT INTO agent_notes (task_id, author, text) VALUES ($1, $2, $3)`, taskID, author, text)
		return interpretError(err)
	})
}

// AgentNotesAfter returns a task's notes with id above after, oldest first.
func (s *Store) AgentNotesAfter(ctx context.Context, taskID string, after int64) ([]AgentNote, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, author, text FROM agent_notes WHERE task_id = $1 AND id > $2 ORDER BY id LIMIT 50`, taskID, after)
	if err != nil {
		return nil, interpretError(err)
	}
	defer rows.Close()
	var out []AgentNote
	for rows.Next() {
		var n AgentNote
		if err := rows.Scan(&n.ID, &n.Author, &n.Text); err != nil {
			return nil, interpretError(err)
		}
		out = append(out, n)
	}
	return out, interpretError(rows.Err())
}
