package handlers_test

import (
	"context"
	"flightdeck/internal/notify"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/dbtest"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
)

const testPassword = "correct horse battery"

// testPasswordHash is testPassword's hash at bcrypt's lowest cost, made
// once: at the product's cost a hash or a check takes about 0.65 s of CPU
// under -race, and every test's users and sign-ins paid it (half the
// package's time on two cores). Checking a password reads the cost from
// the hash, so sign-ins take the same path, only quicker.
var testPasswordHash = sync.OnceValues(func() (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(testPassword), bcrypt.MinCost)
	return string(h), err
})

// testBundle is a running server over a fresh database with two teams:
// alice deploys for acme, bob is admin of rival.
type testBundle struct {
	srv        *httptest.Server
	echo       *echo.Echo
	pool       *pgxpool.Pool
	store      *store.Store
	aliceToken string
	bobToken   string
}

type configT = config.Config

func setup(t *testing.T) *testBundle { return setupWith(t, nil) }

func setupWith(t *testing.T, tune func(*config.Config)) *testBundle {
	t.Helper()
	return setupCatalog(t, tune, nil)
}

// setupCatalog is setupWith offering catalog's pipelines (nil: the built-in ones).
func setupCatalog(t *testing.T, tune func(*config.Config), catalog *pipeline.Catalog) *testBundle {
	t.Helper()
	return setupDeps(t, tune, catalog, nil)
}

// setupDeps is setupCatalog with a last say on the handlers' dependencies,
// given the server's base URL (known before it serves).
func setupDeps(t *testing.T, tune func(*config.Config), catalog *pipeline.Catalog, tuneDeps func(d *handlers.Deps, baseURL string)) *testBundle {
	t.Helper()
	pool := dbtest.DB(t)
	st := store.New(pool)
	ctx := t.Context()
	hash, err := testPasswordHash()
	require.NoError(t, err)
	b := &testBundle{pool: pool, store: st}
	for _, u := range []struct {
		email, team string
		role        auth.Role
		token       *string
	}{{"alice@acme.test", "acme", auth.RoleDeployer, &b.aliceToken}, {"bob@rival.test", "rival", auth.RoleAdmin, &b.bobToken}} {
		_, err := st.UserAdd(ctx, store.UserAddParams{Email: u.email, Team: u.team, Role: u.role, PasswordHash: hash})
		require.NoError(t, err)
		secret, h := auth.NewSecret(auth.TokenPrefix)
		require.NoError(t, st.TokenCreate(ctx, u.email, "test", h))
		*u.token = secret
	}
	cfg, err := config.Load(func(string) string { return "" })
	require.NoError(t, err)
	cfg.APIRate = 1000
	// The request deadline is for database outages (health_test.go tests it
	// with the default); under -race on a busy machine a login's password
	// hash alone can take longer than the default.
	cfg.RequestTimeout = 30 * time.Second
	if tune != nil {
		tune(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	notifier := notify.NewListener(st, logger)
	hub := notify.NewHub()
	hub.Attach(notifier)
	t.Cleanup(hub.Follow(st.Wakeups()))
	listening := make(chan struct{})
	notifier.OnConnect(sync.OnceFunc(func() { close(listening) }))
	ctx2, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = notifier.Run(ctx2); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	// Changes made from here on reach the hub: LISTEN is in place.
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("the notifier did not connect")
	}
	b.srv = httptest.NewUnstartedServer(nil)
	deps := handlers.Deps{Config: cfg, Store: st, Logger: logger, Hub: hub, Pipelines: catalog}
	if tuneDeps != nil {
		tuneDeps(&deps, "http://"+b.srv.Listener.Addr().String())
	}
	b.echo = handlers.New(deps)
	// Every /api/v1 request and answer of the tests is checked against the
	// OpenAPI document (openapi_check_test.go).
	b.srv.Config.Handler = checkAPI(t, b.echo)
	b.srv.Start()
	t.Cleanup(b.srv.Close)
	return b
}

// browser is an HTTP client with cookies that does not follow redirects.
// Its timeout only catches a hang: a sign-in checks a bcrypt hash, which
// under -race with dozens of parallel tests on two cores took over 10 s
// (the suite's sign-ins queued behind each other and failed, not the code).
func (b *testBundle) browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{Jar: jar, Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
}

func (b *testBundle) get(t *testing.T, c *http.Client, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, b.srv.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res, string(body)
}

// csrfFrom loads the login page and returns the form's CSRF token.
func (b *testBundle) csrfFrom(t *testing.T, c *http.Client, path string) string {
	t.Helper()
	_, body := b.get(t, c, path, nil)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	tok, ok := doc.Find(`input[name="_csrf"]`).First().Attr("value")
	require.True(t, ok, "page has a CSRF field")
	return tok
}

func (b *testBundle) login(t *testing.T, c *http.Client, email, password string) *http.Response {
	t.Helper()
	tok := b.csrfFrom(t, c, "/login")
	res, err := c.PostForm(b.srv.URL+"/login", url.Values{"email": {email}, "password": {password}, "_csrf": {tok}, "next": {"/tasks"}})
	require.NoError(t, err)
	res.Body.Close()
	return res
}

func TestHealth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.srv.Client()
	res, _ := b.get(t, c, "/healthz", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, _ = b.get(t, c, "/readyz", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	res, body := b.get(t, c, "/metrics", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, "flightdeck_http_requests_total")
}

func TestAPIAuth(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.srv.Client()

	t.Run("NoCredentialsIs401JSON", func(t *testing.T) {
		res, body := b.get(t, c, "/api/v1/me", nil)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.JSONEq(t, `{"error":{"code":"unauthenticated","message":"sign in or send a valid bearer token"}}`, body)
	})
	t.Run("BadTokenIs401", func(t *testing.T) {
		res, _ := b.get(t, c, "/api/v1/me", map[string]string{"Authorization": "Bearer fd_nope"})
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		res, _ = b.get(t, c, "/api/v1/me", map[string]string{"Authorization": "Basic abc"})
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	})
	t.Run("TokenWorks", func(t *testing.T) {
		res, body := b.get(t, c, "/api/v1/me", map[string]string{"Authorization": "Bearer " + b.aliceToken})
		require.Equal(t, http.StatusOK, res.StatusCode)
		require.Contains(t, body, `"email":"alice@acme.test"`)
		require.Contains(t, body, `{"name":"acme","role":"deployer"}`)
		require.NotContains(t, body, "rival")
	})
	t.Run("RevokedTokenIs401AtOnce", func(t *testing.T) {
		secret, h := auth.NewSecret(auth.TokenPrefix)
		require.NoError(t, b.store.TokenCreate(t.Context(), "alice@acme.test", "temp", h))
		hdr := map[string]string{"Authorization": "Bearer " + secret}
		res, _ := b.get(t, c, "/api/v1/me", hdr)
		require.Equal(t, http.StatusOK, res.StatusCode)
		_, err := b.store.TokenRevoke(t.Context(), "alice@acme.test", "temp")
		require.NoError(t, err)
		res, _ = b.get(t, c, "/api/v1/me", hdr)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
	})
	t.Run("UnknownRouteIs404JSON", func(t *testing.T) {
		res, body := b.get(t, c, "/api/v1/nope", map[string]string{"Authorization": "Bearer " + b.aliceToken})
		require.Equal(t, http.StatusNotFound, res.StatusCode)
		require.Contains(t, body, `"code":"not_found"`)
	})
}

func TestLogin(t *testing.T) {
	t.Parallel()
	b := setup(t)

	t.Run("PagesRedirectToLogin", func(t *testing.T) {
		res, _ := b.get(t, b.browser(t), "/tasks?state=running", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/login?next=%2Ftasks%3Fstate%3Drunning", res.Header.Get("Location"))
	})
	t.Run("WrongPasswordShowsError", func(t *testing.T) {
		c := b.browser(t)
		tok := b.csrfFrom(t, c, "/login")
		res, err := c.PostForm(b.srv.URL+"/login", url.Values{"email": {"alice@acme.test"}, "password": {"nope-nope"}, "_csrf": {tok}})
		require.NoError(t, err)
		doc, err := goquery.NewDocumentFromReader(res.Body)
		res.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusUnauthorized, res.StatusCode)
		require.Contains(t, doc.Find(`[data-testid="login-error"]`).Text(), "Wrong email or password")
		res, _ = b.get(t, c, "/tasks", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, "no session")
	})
	t.Run("MissingCSRFIs403", func(t *testing.T) {
		c := b.browser(t)
		b.csrfFrom(t, c, "/login") // has the cookie, but sends no token
		res, err := c.PostForm(b.srv.URL+"/login", url.Values{"email": {"alice@acme.test"}, "password": {testPassword}})
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusForbidden, res.StatusCode)
	})
	t.Run("LoginShowsTasksAndLogoutEndsSession", func(t *testing.T) {
		c := b.browser(t)
		res := b.login(t, c, "alice@acme.test", testPassword)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		require.Equal(t, "/tasks", res.Header.Get("Location"))
		var session *http.Cookie
		for _, ck := range res.Cookies() {
			if ck.Name == "fd_session" {
				session = ck
			}
		}
		require.NotNil(t, session)
		require.True(t, session.HttpOnly)
		require.Equal(t, http.SameSiteLaxMode, session.SameSite)

		res, body := b.get(t, c, "/tasks", nil)
		require.Equal(t, http.StatusOK, res.StatusCode)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		require.Contains(t, doc.Find(`[data-testid="viewer-email"]`).Text(), "alice@acme.test")
		require.Equal(t, 1, doc.Find(`[data-testid="task-list-empty"]`).Length())

		tok := b.csrfFrom(t, c, "/tasks")
		res, err = c.PostForm(b.srv.URL+"/logout", url.Values{"_csrf": {tok}})
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
		res, _ = b.get(t, c, "/tasks", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
	})
	t.Run("ExpiredSessionRedirects", func(t *testing.T) {
		c := b.browser(t)
		b.login(t, c, "alice@acme.test", testPassword)
		_, err := b.pool.Exec(t.Context(), `UPDATE sessions SET expires_at = now() - interval '1 second'`)
		require.NoError(t, err)
		res, _ := b.get(t, c, "/tasks", nil)
		require.Equal(t, http.StatusSeeOther, res.StatusCode)
	})
	t.Run("OpenRedirectRefused", func(t *testing.T) {
		c := b.browser(t)
		tok := b.csrfFrom(t, c, "/login")
		res, err := c.PostForm(b.srv.URL+"/login", url.Values{"email": {"alice@acme.test"}, "password": {testPassword}, "_csrf": {tok}, "next": {"//evil.test/x"}})
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, "/tasks", res.Header.Get("Location"))

		// The login page's next field, from a link's query string.
		c = b.browser(t)
		_, body := b.get(t, c, "/login?next=%2F%09%2Fevil.example", nil)
		doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
		require.NoError(t, err)
		require.Equal(t, "/tasks", doc.Find(`input[name="next"]`).AttrOr("value", ""))
		tok = b.csrfFrom(t, c, "/login")
		res, err = c.PostForm(b.srv.URL+"/login", url.Values{"email": {"alice@acme.test"}, "password": {testPassword}, "_csrf": {tok}, "next": {"/\t/evil.example"}})
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, "/tasks", res.Header.Get("Location"))
	})
}

func TestPartialRender(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)

	res, body := b.get(t, c, "/tasks", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, res.Header.Values("Vary"), "HX-Request")
	require.Contains(t, body, "<html")

	res, body = b.get(t, c, "/tasks", map[string]string{"HX-Request": "true"})
	require.Contains(t, res.Header.Values("Vary"), "HX-Request")
	require.NotContains(t, body, "<html")
	require.Contains(t, body, `data-testid="task-list-empty"`)

	_, body = b.get(t, c, "/tasks", map[string]string{"HX-Request": "true", "HX-Boosted": "true"})
	require.Contains(t, body, "<html", "boosted navigation gets the full page")
	_, body = b.get(t, c, "/tasks", map[string]string{"HX-Request": "true", "HX-History-Restore-Request": "true"})
	require.Contains(t, body, "<html", "history restore gets the full page")
}

func TestAnotherTeamsTasksAreInvisible(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := t.Context()
	// A task of team rival, created by bob.
	_, err := b.pool.Exec(ctx, `
		INSERT INTO tasks (team_id, kind, pipeline, created_by)
		SELECT m.team_id, 'deploy', 'rival-secret-pipeline', m.user_id
		FROM memberships m JOIN users u ON u.id = m.user_id WHERE u.email = 'bob@rival.test'`)
	require.NoError(t, err)

	alice := b.browser(t)
	b.login(t, alice, "alice@acme.test", testPassword)
	_, body := b.get(t, alice, "/tasks", nil)
	require.NotContains(t, body, "rival-secret-pipeline")
	require.Contains(t, body, `data-testid="task-list-empty"`)

	bob := b.browser(t)
	b.login(t, bob, "bob@rival.test", testPassword)
	_, body = b.get(t, bob, "/tasks", nil)
	require.Contains(t, body, "rival-secret-pipeline")
}

func TestErrorPageForHTML(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	res, body := b.get(t, c, "/no-such-page", map[string]string{"Accept": "text/html"})
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, `data-testid="error-page"`)
}

func TestDashboardAndPipelinesPages(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"noop","priority":"hotfix"}`, nil).status)
	require.Equal(t, http.StatusAccepted, b.api(t, "POST", "/api/v1/tasks", b.bobToken, `{"kind":"deploy","pipeline":"noop","priority":"hotfix"}`, nil).status)

	res, body := b.get(t, c, "/dashboard", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, "1", doc.Find(`[data-testid="stat-pending"] .stat-value`).Text(), "only the own team's task")
	require.Equal(t, "1", doc.Find(`[data-testid="pending-hotfix"] .stat-value`).Text())
	require.Equal(t, "page", doc.Find(`[data-testid="nav-dashboard"]`).AttrOr("aria-current", ""))
	require.Equal(t, 1, doc.Find(`[data-testid="throughput-chart"]`).Length())
	require.Equal(t, "0 finished", doc.Find(`[data-testid="throughput-finished"]`).Text())

	res, body = b.get(t, c, "/pipelines", nil)
	require.Equal(t, http.StatusOK, res.StatusCode)
	doc, err = goquery.NewDocumentFromReader(strings.NewReader(body))
	require.NoError(t, err)
	require.Equal(t, len(pipeline.Builtin()), doc.Find(`[data-testid="pipeline"]`).Length())
	require.Contains(t, doc.Find(`#pipeline-web-service`).Text(), "create_dns → issue_cert → deploy_container → configure_monitoring")

	r := b.api(t, "GET", "/api/v1/pipelines", b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, r.status)
	pls := r.body["pipelines"].([]any)
	require.Len(t, pls, len(pipeline.Builtin()))
	var ws map[string]any
	for _, p := range pls {
		if p.(map[string]any)["name"] == "web-service" {
			ws = p.(map[string]any)
		}
	}
	require.NotNil(t, ws)
	require.Equal(t, []any{"create_dns", "issue_cert", "deploy_container", "configure_monitoring"}, ws["steps"])
	require.Equal(t, "app", ws["params"].([]any)[0].(map[string]any)["name"])
}
