package handlers

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

const maxAgentInputBytes = 8 << 10

// agentInput handles answer (to an agent's question) and message (a note
// for its next iteration), shared by the API, the WebSocket and the page.
func (h *Handler) agentInput(c echo.Context, kind, taskID, questionID, text string) error {
	ctx, u := c.Request().Context(), userOf(c)
	t, err := h.taskFor(ctx, u, taskID, task.ActAgentInput)
	if err != nil {
		return err
	}
	if t.Kind != task.KindAgent {
		return errInvalid("task_id", "%s is only for agent tasks", kind)
	}
	if strings.TrimSpace(text) == "" {
		return errInvalid("text", "text is required")
	}
	if len(text) > maxAgentInputBytes {
		return errInvalid("text", "text must be at most %d bytes", maxAgentInputBytes)
	}
	if err := checkText("text", text); err != nil {
		return err
	}
	if kind == "answer" {
		if questionID == "" {
			return errInvalid("question_id", "question_id is required")
		}
		_, err = h.store.AgentQuestionAnswer(ctx, store.AgentQuestionAnswerParams{
			TeamIDs: []string{t.TeamID}, TaskID: taskID, QuestionID: questionID, Text: text, Actor: u.Email})
	} else {
		err = h.store.AgentNoteAdd(ctx, []string{t.TeamID}, taskID, u.Email, text)
	}
	switch {
	case errors.Is(err, store.ErrConflict):
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "this question is not pending (already answered, expired, or the task is not waiting for it)"}
	case errors.Is(err, store.ErrTerminal):
		return &APIError{Status: http.StatusConflict, Code: "conflict", Message: "the task already ended"}
	case err != nil:
		return err
	}
	return nil
}
