package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"flightdeck/workflow/task"
)

// ApprovalPark describes the approvals a task parks for (awaiting_approval,
// no lease: it holds no worker while it waits, invariant 7).
type ApprovalPark struct {
	Steps   []ApprovalStep
	Roles   []string
	Timeout time.Duration
	Kind    string // step | tool_call
}

// ApprovalStep is one step that needs a decision.
type ApprovalStep struct {
	Idx     int
	Name    string
	Attempt int
	Detail  json.RawMessage
}

// QuestionPark is an agent's question a task parks for (awaiting_input).
// Event is the agent.question event; the question's id is added to its data.
type QuestionPark struct {
	CallSeq int
	Text    string
	Event   task.Event
}

// AgentSave is an agent task's state, saved with the write; the task's
// progress becomes its iteration of Budget.
type AgentSave struct {
	State  AgentState
	Budget int
}

// parkRows adds w's approval or question rows in tx, once the task is
// locked and still held under w.Token, and puts their events before w's
// last one (the state change they park for). It reports false when the
// lease was lost: nothing is written.
func parkRows(ctx context.Context, tx pgx.Tx, w *TaskWrite) (bool, error) {
	var teamID string
	var held, applied bool
	err := tx.QueryRow(ctx, `SELECT team_id, lease_token IS NOT DISTINCT FROM $2::uuid, last_write IS NOT DISTINCT FROM NULLIF($3, '')::uuid
		FROM tasks WHERE id = $1 FOR UPDATE`, w.ID, w.Token, w.WriteID).Scan(&teamID, &held, &applied)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, interpretError(err)
	}
	if applied && w.WriteID != "" {
		return true, nil // an earlier try of this write parked it; taskApply answers it
	}
	if !held {
		return false, nil
	}
	var evs []task.Event
	if p := w.Approvals; p != nil {
		if evs, err = approvalsRequest(ctx, tx, teamID, w.ID, *p); err != nil {
			return false, err
		}
	}
	if q := w.Question; q != nil {
		ev, err := questionAsk(ctx, tx, teamID, w.ID, *q)
		if err != nil {
			return false, err
		}
		evs = append(evs, ev)
	}
	if n := len(w.Events); n > 0 {
		evs = append(evs, w.Events[n-1])
		w.Events = append(w.Events[:n-1:n-1], evs...)
	} else {
		w.Events = evs
	}
	return true, nil
}

// approvalsRequest inserts the approvals of p and returns their
// approval.requested events. Older pending approvals of those steps are
// superseded (expired) so a stale one can never be decided.
func approvalsRequest(ctx context.Context, tx pgx.Tx, teamID, taskID string, p ApprovalPark) ([]task.Event, error) {
	kind := p.Kind
	if kind == "" {
		kind = "step"
	}
	var events []task.Event
	for _, st := range p.Steps {
		if _, err := tx.Exec(ctx, `UPDATE approvals SET state = 'expired' WHERE task_id = $1 AND step_idx = $2 AND state = 'pending'`, taskID, st.Idx); err != nil {
			return nil, interpretError(err)
		}
		detail := st.Detail
		if len(detail) == 0 {
			detail = json.RawMessage(`{}`)
		}
		a, err := approvalOne(tx.Query(ctx, `
			INSERT INTO approvals (task_id, team_id, step_idx, step_name, attempt, kind, detail, roles, expires_at, changes)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9),
				-- what a deploy changes: its target's current deploy's params and its own
				(SELECT jsonb_build_object('from', c.params, 'to', t.params) FROM tasks t
					-- the target's current deploy: its last completed one
					LEFT JOIN LATERAL (SELECT params FROM tasks
						WHERE team_id = t.team_id AND pipeline = t.pipeline AND target_key = t.target_key AND state = 'completed'
						ORDER BY finished_at DESC, id DESC LIMIT 1) c ON true
					WHERE t.id = $1 AND t.kind = 'deploy'))
			ON CONFLICT (task_id, step_idx, attempt) DO UPDATE SET state = 'pending', requested_at = now(),
				expires_at = EXCLUDED.expires_at, decided_by = NULL, decided_at = NULL, comment = NULL,
				decisions = '[]', changes = EXCLUDED.changes
			RETURNING *`, taskID, teamID, st.Idx, st.Name, st.Attempt, kind, []byte(detail), p.Roles, p.Timeout.Seconds()))
		if err != nil {
			return nil, err
		}
		data, _ := json.Marshal(map[string]any{"approval_id": a.ID, "roles": p.Roles, "expires_at": a.ExpiresAt, "detail": json.RawMessage(detail)})
		events = append(events, task.Event{Type: task.EventApprovalRequested, Status: task.StatusApproval, Step: st.Idx,
			StepName: st.Name, Message: fmt.Sprintf("Waiting for approval of %s", st.Name), Data: data})
	}
	return events, nil
}

// questionAsk asks q (once per tool call: a resumed task re-asking finds
// the same row) and returns its event, whose data carries the question's id.
func questionAsk(ctx context.Context, tx pgx.Tx, teamID, taskID string, q QuestionPark) (task.Event, error) {
	row, err := questionOne(tx.Query(ctx, `
		INSERT INTO agent_questions (task_id, team_id, call_seq, text) VALUES ($1, $2, $3, $4)
		ON CONFLICT (task_id, call_seq) DO UPDATE SET text = agent_questions.text
		RETURNING *`, taskID, teamID, q.CallSeq, q.Text))
	if err != nil {
		return task.Event{}, err
	}
	ev := q.Event
	data := map[string]any{}
	if len(ev.Data) > 0 {
		_ = json.Unmarshal(ev.Data, &data)
	}
	data["question_id"], data["text"] = row.ID, row.Text
	ev.Data, _ = json.Marshal(data)
	return ev, nil
}

// agentStateUpsert saves an agent task's state (its write was applied in tx).
func agentStateUpsert(ctx context.Context, tx pgx.Tx, taskID string, s AgentSave) error {
	a := s.State
	_, err := tx.Exec(ctx, `
		INSERT INTO agent_states (task_id, goal, iteration, budgets, spend, plan, facts, open_questions, risk_flags, messages, loop, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now())
		ON CONFLICT (task_id) DO UPDATE SET goal = EXCLUDED.goal, iteration = EXCLUDED.iteration, budgets = EXCLUDED.budgets,
			spend = EXCLUDED.spend, plan = EXCLUDED.plan, facts = EXCLUDED.facts, open_questions = EXCLUDED.open_questions,
			risk_flags = EXCLUDED.risk_flags, messages = EXCLUDED.messages, loop = EXCLUDED.loop, updated_at = now()`,
		taskID, a.Goal, a.Iteration, jsonOr(a.Budgets, `{}`), jsonOr(a.Spend, `{}`), jsonOr(a.Plan, `[]`), jsonOr(a.Facts, `[]`),
		jsonOr(a.OpenQuestions, `[]`), jsonOr(a.RiskFlags, `[]`), jsonOr(a.Messages, `[]`), jsonOr(a.Loop, `{}`))
	return interpretError(err)
}
