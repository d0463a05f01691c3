package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

type answerRequest struct {
	Text string `json:"text"`
}

// apiQuestionAnswer answers an agent's question; the task resumes.
func (h *Handler) apiQuestionAnswer(c echo.Context) error {
	var req answerRequest
	if _, err := readJSON(c, &req); err != nil {
		return err
	}
	if err := h.agentInput(c, "answer", c.Param("id"), c.Param("question_id"), req.Text); err != nil {
		return err
	}
	qs, err := h.store.AgentQuestionList(c.Request().Context(), userOf(c).TeamIDs(), c.Param("id"))
	if err != nil {
		return err
	}
	for _, q := range qs {
		if q.ID == c.Param("question_id") {
			return c.JSON(http.StatusOK, q)
		}
	}
	return errNotFound
}
