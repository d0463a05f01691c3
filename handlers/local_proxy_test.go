package handlers_test

import (
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/stretchr/testify/require"

	"flightdeck/store"
)

// getHost sends GET path to the server with the given Host header.
func (b *testBundle) getHost(t *testing.T, host, path string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

func TestLocalProxy(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "upstream path=%s host=%s xfh=%s", r.URL.Path, r.Host, r.Header.Get("X-Forwarded-Host"))
	}))
	t.Cleanup(upstream.Close)
	_, ps, err := net.SplitHostPort(upstream.Listener.Addr().String())
	require.NoError(t, err)
	port, err := strconv.Atoi(ps)
	require.NoError(t, err)

	// A route made before its instance exists answers 503.
	_, err = b.store.LocalRouteCreate(ctx, "acme", "empty.staging", "", store.LocalEffect{Key: "k0", Action: "test"})
	require.NoError(t, err)
	code, body, _ := b.getHost(t, "empty.staging.localhost", "/")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Contains(t, body, "no instance serves empty.staging")

	_, err = b.store.LocalRouteCreate(ctx, "acme", "shop.staging", "", store.LocalEffect{Key: "k1", Action: "test"})
	require.NoError(t, err)
	inst, err := b.store.LocalInstanceBegin(ctx, store.LocalInstanceBeginParams{Team: "acme", Host: "shop.staging", Version: "1.0.0", Node: "n", Key: "k2"})
	require.NoError(t, err)
	require.NoError(t, b.store.LocalInstanceSetProcess(ctx, inst.ID, 1, port, "starting"))
	_, _, err = b.store.LocalInstanceActivate(ctx, inst.ID, 100, store.LocalEffect{Key: "k3", Action: "test"})
	require.NoError(t, err)

	for _, host := range []string{"shop.staging.localhost", "shop.staging.localhost:" + ps, "SHOP.staging.localhost.", "shop.staging", "shop.staging:8080"} {
		code, body, _ := b.getHost(t, host, "/some/page?x=1")
		require.Equal(t, http.StatusOK, code, host)
		require.Contains(t, body, "upstream path=/some/page host="+host, host)
	}
	// Before auth: an app path under a route host is the app's, not ours.
	code, body, _ = b.getHost(t, "shop.staging.localhost", "/tasks")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "upstream path=/tasks")

	// Unknown *.localhost route: 404; other hosts reach flightdeck.
	code, body, _ = b.getHost(t, "nope.staging.localhost", "/")
	require.Equal(t, http.StatusNotFound, code)
	require.Contains(t, body, "no route for nope.staging")
	for _, host := range []string{"127.0.0.1", "localhost:8080", "flightdeck.example.com"} {
		code, body, _ := b.getHost(t, host, "/healthz")
		require.Equal(t, http.StatusOK, code, host)
		require.JSONEq(t, `{"status":"ok"}`, body)
	}

	// Another team cannot take the host.
	_, err = b.store.LocalRouteCreate(ctx, "rival", "shop.staging", "", store.LocalEffect{Key: "k4", Action: "test"})
	require.ErrorIs(t, err, store.ErrForbidden)
}

func TestLocalCRL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	code, body, hdr := b.getHost(t, "127.0.0.1", "/local/ca.crl")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "application/pkix-crl", hdr.Get("Content-Type"))
	crl, err := x509.ParseRevocationList([]byte(body))
	require.NoError(t, err)
	require.Empty(t, crl.RevokedCertificateEntries)
}

func TestDashboardShowsLocalAlerts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	_, body := b.get(t, c, "/dashboard", nil)
	require.Contains(t, body, `data-testid="alerts-empty"`)

	for i, m := range []struct{ team, host string }{{"acme", "shop.staging"}, {"rival", "spy.staging"}} {
		_, err := b.store.LocalMonitorCreate(ctx, m.team, m.host, time.Minute, store.LocalEffect{Key: fmt.Sprint("m", i), Action: "test"})
		require.NoError(t, err)
	}
	due, err := b.store.LocalMonitorClaimDue(ctx, 10)
	require.NoError(t, err)
	require.Len(t, due, 2)
	for _, d := range due {
		changed, err := b.store.LocalMonitorRecord(ctx, d.MonitorID, false, "no running instance serves "+d.Host)
		require.NoError(t, err)
		require.True(t, changed)
	}

	_, body = b.get(t, c, "/dashboard", nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	rows := doc.Find(`[data-testid="alert-row"]`)
	require.Equal(t, 1, rows.Length(), "only the own team's alerts")
	require.Equal(t, "shop.staging", rows.AttrOr("data-host", ""))
	require.Contains(t, rows.Text(), "no running instance serves shop.staging")
}
