package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/auth"
	"flightdeck/internal/tracing"
	"flightdeck/store"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

type promoteRequest struct {
	Pipeline string         `json:"pipeline"`
	Target   map[string]any `json:"target"`
	From     string         `json:"from"`
	To       string         `json:"to"`
	Team     string         `json:"team"`
	Override *struct {
		Reason string `json:"reason"`
	} `json:"override"`
}

func (h *Handler) apiEnvironmentPromote(c echo.Context) error {
	var req promoteRequest
	body, err := readJSON(c, &req)
	if err != nil {
		return err
	}
	key, err := idempotencyKey(c)
	if err != nil {
		return err
	}
	t, created, err := h.promote(c.Request().Context(), userOf(c), req, key, body)
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

// promote submits a deploy of from's current deploy of the target to the
// environment to (default from's promote_to), created by u: the same
// params, secrets included, with the environment param set to to, under
// every rule of to.
func (h *Handler) promote(ctx context.Context, u *auth.User, req promoteRequest, idemKey string, body []byte) (*task.Task, bool, error) {
	pl, ok := h.pipelines.Get(req.Pipeline)
	if !ok {
		return nil, false, errInvalid("pipeline", "unknown pipeline %q", req.Pipeline)
	}
	envParam := pl.EnvironmentParam()
	if envParam == "" {
		return nil, false, errInvalid("pipeline", "pipeline %s deploys to no environment (no environment field and no env param)", pl.Name)
	}
	if !freezeEnvName.MatchString(req.From) {
		return nil, false, errInvalid("from", "from must name the environment to promote from")
	}
	to := req.To
	if to == "" {
		if e := h.pipelines.Environments().Get(req.From); e != nil {
			to = e.PromoteTo
		}
		if to == "" {
			return nil, false, errInvalid("to", "%s has no promote_to in environments.yaml: name the environment in to", req.From)
		}
	}
	if !freezeEnvName.MatchString(to) || to == req.From {
		return nil, false, errInvalid("to", "to must name another environment")
	}
	team, err := deployTeam(u, req.Team)
	if err != nil {
		return nil, false, err
	}
	target := map[string]any{envParam: req.From}
	for _, name := range pl.TargetParams() {
		if name == envParam {
			continue
		}
		v, ok := req.Target[name]
		if !ok {
			return nil, false, errInvalid("target."+name, "target needs %s", name)
		}
		// A value of the wrong type names no target: say so (422), not
		// "nothing to promote".
		v, msg := pl.CheckParam(name, v)
		if msg != "" {
			return nil, false, errInvalid("target."+name, "target.%s %s", name, msg)
		}
		target[name] = v
	}
	for name := range req.Target {
		if _, ok := target[name]; !ok || name == envParam {
			return nil, false, errInvalid("target."+name, "%s is not a target param of %s other than its environment", name, pl.Name)
		}
	}
	envs, err := h.store.EnvironmentList(ctx, store.EnvironmentListParams{TeamIDs: []string{team.TeamID}, Pipeline: pl.Name, TargetKey: pl.TargetKey(target)})
	if err != nil {
		return nil, false, err
	}
	if len(envs) == 0 || envs[0].Current == nil {
		return nil, false, &APIError{Status: http.StatusConflict, Code: "conflict",
			Message: fmt.Sprintf("nothing to promote: %s has no completed deploy of %s for this target", req.From, pl.Name)}
	}
	src, err := h.store.TaskGet(ctx, []string{team.TeamID}, envs[0].Current.TaskID)
	if err != nil {
		return nil, false, err
	}
	params := map[string]any{}
	if err := json.Unmarshal(src.Params, &params); err != nil {
		return nil, false, errInvalid("params", "task %s has unreadable params", src.ID)
	}
	if err := saga.RepeatSecrets(ctx, h.store, src, pl, params); errors.Is(err, saga.ErrUnreadableParams) {
		return nil, false, errInvalid("params", "task %s has unreadable params", src.ID)
	} else if err != nil {
		return nil, false, err
	}
	params[envParam] = to
	raw, _ := json.Marshal(params)
	validated, ferr := pl.Validate(raw)
	if ferr != nil {
		return nil, false, errInvalid(ferr.Field, "%s's params do not validate for %s: %s %s", src.ID, to, ferr.Field, ferr.Message)
	}
	hash := sha256.Sum256(append([]byte("promote\x00"), body...))
	in := store.TaskInsertParams{TeamID: team.TeamID, CreatedByID: u.ID, Priority: src.Priority, MaxAttempts: src.MaxAttempts,
		IdempotencyKey: idemKey, RequestHash: hash[:], MaxPending: h.cfg.MaxPending, Traceparent: tracing.Traceparent(ctx),
		Team: team.Team, CreatedBy: u.Email}
	o := saga.Protection{PromotedFrom: src.ID}
	if req.Override != nil {
		o.Override = req.Override.Reason
		if o.Override == "" {
			return nil, false, errInvalid("override.reason", "an override needs a reason of at least %d characters", saga.MinOverrideReason)
		}
	}
	return h.submit(ctx, u, saga.Submission{Insert: in, Pipeline: pl, Params: validated, Team: team.Team, Protection: o})
}
