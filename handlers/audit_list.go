package handlers

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"flightdeck/internal/words"
	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

// auditTypes are the audit log's types the page filters by (contract §9).
var auditTypes = []string{"approval.decided", "task.override", "task.cancelled", "task.resolved", "task.paused", "task.resumed",
	"step.skipped", "freeze.created", "freeze.ended", "token.created", "token.revoked", "webhook.create", "webhook.delete"}

// maxAuditCSV bounds the rows of one CSV download.
const maxAuditCSV = 10000

// auditList is the /audit page (admins), and its CSV with ?format=csv.
func (h *Handler) auditList(c echo.Context) error {
	p, err := h.auditQuery(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	if c.QueryParam("format") == "csv" {
		return h.auditCSV(c, p)
	}
	entries, next, err := h.store.AuditList(ctx, p)
	if err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"type": p.Type, "actor": p.Actor, "team": c.QueryParam("team")} {
		if v != "" {
			q.Set(k, v)
		}
	}
	props := pages.AuditProps{Type: p.Type, Actor: p.Actor, Types: auditTypes}
	csvQ := url.Values{}
	for k, v := range q {
		csvQ[k] = v
	}
	csvQ.Set("format", "csv")
	props.CSV = "/audit?" + csvQ.Encode()
	if next > 0 {
		q.Set("before", strconv.FormatInt(next, 10))
		props.Next = q.Encode()
	}
	for _, e := range entries {
		r := pages.AuditRow{ID: strconv.FormatInt(e.ID, 10), At: e.At, Actor: task.ShowBidi(e.Actor), Type: e.Type, Detail: task.ShowBidi(string(e.Detail)),
			Sentence: task.ShowBidi(words.Audit(e.Actor, e.Type, e.Detail))}
		if e.TaskID != nil {
			r.TaskID = *e.TaskID
		}
		props.Rows = append(props.Rows, r)
	}
	return h.render(c, http.StatusOK, "Audit log", "audit", pages.Audit(props))
}
