package handlers

import (
	"context"
	"io"
	"net/http"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"flightdeck/views/layout"
	"flightdeck/workflow/task"
)

// htmx request headers (https://htmx.org/reference/#request_headers).
const (
	hxRequest        = "HX-Request"
	hxBoosted        = "HX-Boosted"
	hxHistoryRestore = "HX-History-Restore-Request"
)

func isHTMX(c echo.Context) bool { return c.Request().Header.Get(hxRequest) == "true" }

// isPartial: an htmx request that swaps part of a page gets the content
// alone; boosted navigations and history restores need the whole document.
func isPartial(c echo.Context) bool {
	hd := c.Request().Header
	return hd.Get(hxRequest) == "true" && hd.Get(hxBoosted) != "true" && hd.Get(hxHistoryRestore) != "true"
}

// approvalCountKey holds a count a handler already made of the badge's
// approvals.
const approvalCountKey = "approval_count"

// approvalCount is the navigation's badge: one query per full page. An
// error page for a failing database does not ask again, and a failed
// count shows no badge rather than failing the page.
func (h *Handler) approvalCount(c echo.Context, userID string, status int) int {
	if status >= http.StatusInternalServerError {
		return 0
	}
	if n, ok := c.Get(approvalCountKey).(int); ok {
		return n // the page counted them already (renderInbox)
	}
	n, err := h.store.ApprovalInboxCount(c.Request().Context(), userID)
	if err != nil {
		requestLogger(c, h.logger).Warn("Approval count failed", "error", err)
		return 0
	}
	return n
}

// render writes a page: content alone for htmx partial requests, wrapped in
// the base layout otherwise. Buffered, so a render error still yields a
// clean error response. Vary keeps caches from mixing the two forms.
func (h *Handler) render(c echo.Context, status int, title, active string, content templ.Component) error {
	c.Response().Header().Add("Vary", hxRequest)
	comp := content
	if !isPartial(c) {
		props := layout.BaseProps{Title: title, CSRFToken: csrfToken(c), Active: active}
		if u := userOf(c); u != nil {
			v := &layout.Viewer{Email: u.Email,
				Webhooks: len(u.TeamsWhereMay(task.ActManageWebhooks)) > 0, Audit: len(u.TeamsWhereMay(task.ActReadAudit)) > 0}
			if m, ok := u.Primary(); ok {
				v.Team, v.Role = m.Team, string(m.Role)
			}
			props.Viewer = v
			props.Approvals = h.approvalCount(c, u.ID, status)
		}
		comp = templ.ComponentFunc(func(ctx context.Context, w io.Writer) error {
			return layout.Base(props).Render(templ.WithChildren(ctx, content), w)
		})
	}
	buf := templ.GetBuffer()
	defer templ.ReleaseBuffer(buf)
	if err := comp.Render(c.Request().Context(), buf); err != nil {
		return err
	}
	return c.HTMLBlob(status, buf.Bytes())
}
