package handlers

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

type taskCreateRequest struct {
	Kind            string          `json:"kind"`
	Team            string          `json:"team"`
	Pipeline        string          `json:"pipeline"`
	Params          json.RawMessage `json:"params"`
	Prompt          string          `json:"prompt"`
	Priority        string          `json:"priority"`
	DeadlineSeconds *int            `json:"deadline_seconds"`
	MaxAttempts     *int            `json:"max_attempts"`
	Budgets         *agentBudgets   `json:"budgets"`
	Webhook         *struct {
		URL    string `json:"url"`
		Secret string `json:"secret"`
	} `json:"webhook"`
	RunAt    *time.Time `json:"run_at"`
	Override *struct {
		Reason string `json:"reason"`
	} `json:"override"`
}

const (
	maxDeadlineSeconds = 7 * 24 * 3600
	maxPromptBytes     = 32 << 10
	maxIdempotencyKey  = 255
)

func (h *Handler) apiTaskCreate(c echo.Context) error {
	u := userOf(c)
	var req taskCreateRequest
	body, err := readJSON(c, &req)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	team, err := deployTeam(u, req.Team)
	if err != nil {
		return err
	}
	p := store.TaskInsertParams{
		TeamID: team.TeamID, CreatedByID: u.ID, IdempotencyKey: key, RequestHash: canonicalHash(body),
		MaxPending: h.cfg.MaxPending, Traceparent: tracing.Traceparent(c.Request().Context()),
		Team: team.Team, CreatedBy: u.Email,
	}
	sub := saga.Submission{Insert: p}
	if err := h.validateTaskCreate(c.Request().Context(), &req, team.Team, &sub); err != nil {
		return err
	}
	t, created, err := h.submit(c.Request().Context(), u, sub)
	if err != nil {
		return err
	}
	status := http.StatusAccepted
	if !created {
		status = http.StatusOK
	}
	out, err := h.submittedJSON(c.Request().Context(), t)
	if err != nil {
		return err
	}
	return c.JSON(status, out)
}

// idempotencyKey reads the Idempotency-Key header of a submit or re-run.
func idempotencyKey(c echo.Context) (string, error) {
	key := c.Request().Header.Get("Idempotency-Key")
	if len(key) > maxIdempotencyKey {
		return "", errInvalid("Idempotency-Key", "the Idempotency-Key header must be at most %d characters", maxIdempotencyKey)
	}
	return key, checkText("Idempotency-Key", key)
}

// validateTaskCreate checks the request and fills the submission sub.
// Errors name the field.
func (h *Handler) validateTaskCreate(ctx context.Context, req *taskCreateRequest, team string, sub *saga.Submission) error {
	p := &sub.Insert
	prio, err := task.ParsePriority(req.Priority)
	if err != nil {
		return errInvalid("priority", "%v", err)
	}
	p.Priority = prio
	if req.DeadlineSeconds != nil {
		if *req.DeadlineSeconds <= 0 || *req.DeadlineSeconds > maxDeadlineSeconds {
			return errInvalid("deadline_seconds", "deadline_seconds must be between 1 and %d", maxDeadlineSeconds)
		}
		p.DeadlineSeconds = *req.DeadlineSeconds
	}
	p.MaxAttempts = task.MaxAttemptsDefault
	if req.MaxAttempts != nil {
		if *req.MaxAttempts < 1 || *req.MaxAttempts > 100 {
			return errInvalid("max_attempts", "max_attempts must be between 1 and 100")
		}
		p.MaxAttempts = *req.MaxAttempts
	}
	if req.Webhook != nil {
		if err := h.checkTaskWebhook(ctx, req.Webhook.URL, req.Webhook.Secret); err != nil {
			return err
		}
		p.Webhook, _ = json.Marshal(req.Webhook)
	}
	switch task.Kind(req.Kind) {
	case task.KindDeploy:
		if req.Prompt != "" {
			return errInvalid("prompt", "prompt is for agent tasks; a deploy takes pipeline and params")
		}
		if req.Budgets != nil {
			return errInvalid("budgets", "budgets are for agent tasks")
		}
		if req.Pipeline == "" {
			return errInvalid("pipeline", "pipeline is required for a deploy")
		}
		pl, ok := h.pipelines.Get(req.Pipeline)
		if !ok {
			return errInvalid("pipeline", "unknown pipeline %q", req.Pipeline)
		}
		params, ferrs := pl.ValidateAll(req.Params)
		if len(ferrs) > 0 {
			e := errInvalid(ferrs[0].Field, "%s %s", ferrs[0].Field, ferrs[0].Message)
			if len(ferrs) > 1 {
				for _, fe := range ferrs {
					e.Errors = append(e.Errors, FieldErrorJSON{Field: fe.Field, Message: fe.Message})
				}
			}
			return e
		}
		sub.Pipeline, sub.Params, sub.Team = pl, params, team
		o := saga.Protection{RunAt: req.RunAt}
		if req.Override != nil {
			if err := checkText("override.reason", req.Override.Reason); err != nil {
				return err
			}
			o.Override = req.Override.Reason
			if o.Override == "" {
				return errInvalid("override.reason", "an override needs a reason of at least %d characters", saga.MinOverrideReason)
			}
		}
		sub.Protection = o
	case task.KindAgent:
		if !h.cfg.AgentsEnabled() {
			return errInvalid("kind", "agent tasks need an LLM: set OPENAI_BASE_URL (for a local Ollama: http://localhost:11434/v1, with OPENAI_MODEL) or OPENAI_API_KEY on the server")
		}
		if strings.TrimSpace(req.Prompt) == "" {
			return errInvalid("prompt", "prompt is required for an agent task")
		}
		if len(req.Prompt) > maxPromptBytes {
			return errInvalid("prompt", "prompt must be at most %d bytes", maxPromptBytes)
		}
		if req.Pipeline != "" || len(req.Params) > 0 {
			return errInvalid("pipeline", "pipeline and params are for deploy tasks")
		}
		if req.RunAt != nil || req.Override != nil {
			return errInvalid("run_at", "run_at and override are for deploys")
		}
		p.Kind, p.Prompt = task.KindAgent, req.Prompt
		if req.Budgets != nil {
			params, err := req.Budgets.validate(h.cfg.Agent)
			if err != nil {
				return err
			}
			p.Params = params
		}
	case "":
		return errInvalid("kind", "kind is required: deploy or agent")
	default:
		return errInvalid("kind", "kind must be deploy or agent")
	}
	return nil
}
