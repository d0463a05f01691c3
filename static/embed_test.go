package static

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestURLAndHandler(t *testing.T) {
	t.Parallel()
	u := URL("css/app.css")
	require.Regexp(t, `^/static/css/app\.[0-9a-f]{8}\.css$`, u)
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", u, nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, strings.HasPrefix(rec.Header().Get("Content-Type"), "text/css"))
	require.Contains(t, rec.Header().Get("Cache-Control"), "immutable")
	require.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))

	for _, bad := range []string{"/static/css/app.css", "/static/css/app.00000000.css", "/static/../embed.go"} {
		rec := httptest.NewRecorder()
		Handler().ServeHTTP(rec, httptest.NewRequest("GET", bad, nil))
		require.Equal(t, http.StatusNotFound, rec.Code)
	}
	require.Equal(t, "/static/nope.js", URL("nope.js"))
	require.Regexp(t, `htmx\.min\.[0-9a-f]{8}\.js$`, URL("js/htmx.min.js"))
}
