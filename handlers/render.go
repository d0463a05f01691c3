package handlers

import (
	"context"
	"io"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"flightdeck/views/layout"
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

// render writes a page: content alone for htmx partial requests, wrapped in
// the base layout otherwise. Buffered, so a render error still yields a
// clean error response. Vary keeps caches from mixing the two forms.
func (h *Handler) render(c echo.Context, status int, title, active string, content templ.Component) error {
	c.Response().Header().Add("Vary", hxRequest)
	comp := content
	if !isPartial(c) {
		props := layout.BaseProps{Title: title, CSRFToken: csrfToken(c), Active: active}
		if u := userOf(c); u != nil {
			v := &layout.Viewer{Email: u.Email}
			if m, ok := u.Primary(); ok {
				v.Team, v.Role = m.Team, string(m.Role)
			}
			props.Viewer = v
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
