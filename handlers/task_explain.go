package handlers

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// taskExplain is the page's "Explain this failure" button.
func (h *Handler) taskExplain(c echo.Context) error {
	t, err := h.explainFailure(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/tasks/"+t.ID)
}

// apiTaskExplain is POST /api/v1/tasks/{id}/explain: 202 with the agent task.
func (h *Handler) apiTaskExplain(c echo.Context) error {
	t, err := h.explainFailure(c, c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, toTaskJSON(t))
}

// explainFailure submits an ordinary agent task, by the caller, whose
// prompt is seeded with the failed deploy's failing step and the excerpt of
// that step's output (artifacts are redacted when stored).
func (h *Handler) explainFailure(c echo.Context, id string) (*task.Task, error) {
	ctx, u := c.Request().Context(), userOf(c)
	t, err := h.taskFor(ctx, u, id, task.ActExplain)
	if err != nil {
		return nil, err
	}
	if t.Kind != task.KindDeploy || t.State != task.StateFailed {
		return nil, &APIError{Status: http.StatusConflict, Code: "conflict", Message: "only a failed deploy can be explained"}
	}
	steps, err := h.store.StepList(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	arts, err := h.store.ArtifactList(ctx, []string{t.TeamID}, t.ID)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Explain why deploy task %s (pipeline %s) failed, and suggest what to do next. Do not change anything unless I confirm.\n", t.ID, t.Pipeline)
	if t.Error != nil {
		fmt.Fprintf(&b, "Task error: %s\n", *t.Error)
	}
	for _, s := range steps {
		if s.State != "failed" && s.State != "compensation_failed" {
			continue
		}
		fmt.Fprintf(&b, "\nFailed step %d %s (attempt %d)", s.Idx, s.Name, s.Attempt)
		if s.Error != nil {
			fmt.Fprintf(&b, ": %s", *s.Error)
		}
		b.WriteString("\n")
		for _, a := range arts {
			if a.StepIdx == s.Idx {
				fmt.Fprintf(&b, "Output artifact %s (%s, %d bytes; search it with search_artifact). Excerpt:\n%s\n", a.ID, a.Name, a.Bytes, a.Excerpt)
			}
		}
	}
	prompt := b.String()
	if len(prompt) > maxPromptBytes {
		prompt = prompt[:maxPromptBytes-100] + "\n[excerpt cut]"
	}
	req := taskCreateRequest{Kind: string(task.KindAgent), Prompt: prompt}
	p := store.TaskInsertParams{TeamID: t.TeamID, CreatedByID: u.ID, MaxPending: h.cfg.MaxPending, Traceparent: tracing.Traceparent(ctx)}
	sub := saga.Submission{Insert: p}
	if err := h.validateTaskCreate(ctx, &req, t.Team, &sub); err != nil {
		return nil, err
	}
	nt, _, err := h.submit(ctx, u, sub)
	return nt, err
}
