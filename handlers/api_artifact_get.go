package handlers

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
)

// apiArtifactGet streams an artifact's bytes as an attachment. Content that
// a browser could run is served as plain text, and nosniff stops guessing.
// ?view=raw shows it in the browser instead (a log's "View raw"): always
// as plain text, inline, so nothing in it runs or renders.
func (h *Handler) apiArtifactGet(c echo.Context) error {
	raw := false
	switch c.QueryParam("view") {
	case "":
	case "raw":
		raw = true
	default:
		return errInvalid("view", "view must be raw or left out")
	}
	ctx := c.Request().Context()
	m, err := h.store.ArtifactGet(ctx, userOf(c).TeamIDs(), c.Param("id"))
	if err != nil {
		return err
	}
	etag := `"` + m.SHA256 + `"`
	hd := c.Response().Header()
	hd.Set("ETag", etag)
	hd.Set("X-Content-Type-Options", "nosniff")
	disposition := "attachment"
	if raw {
		disposition = "inline"
		m.ContentType = "text/plain; charset=utf-8"
	}
	hd.Set("Content-Disposition", fmt.Sprintf(`%s; filename="%s"`, disposition, m.Name))
	hd.Set("Cache-Control", "private, max-age=0, must-revalidate")
	if noneMatch(c.Request().Header.Values("If-None-Match"), etag) {
		return c.NoContent(http.StatusNotModified)
	}
	ct := m.ContentType
	if ct == "" || strings.Contains(ct, "html") || strings.Contains(ct, "javascript") || strings.Contains(ct, "svg") {
		ct = "text/plain; charset=utf-8"
	}
	hd.Set("Content-Type", ct)
	hd.Set("Content-Length", strconv.FormatInt(m.Bytes, 10))
	c.Response().WriteHeader(http.StatusOK)
	if c.Request().Method == http.MethodHead {
		return nil
	}
	// The download lasts as long as the client takes, not RequestTimeout.
	return h.store.ArtifactChunks(streamContext(c), m.ID, func(b []byte) error {
		_, err := c.Response().Write(b)
		return err
	})
}

// noneMatch reports whether an If-None-Match header (RFC 9110 §13.1.2)
// names etag: "*", or etag in its list, compared weakly (W/ ignored).
func noneMatch(headers []string, etag string) bool {
	for _, h := range headers {
		for _, tag := range strings.Split(h, ",") {
			tag = strings.TrimPrefix(strings.TrimSpace(tag), "W/")
			if tag == "*" || tag == etag {
				return true
			}
		}
	}
	return false
}
