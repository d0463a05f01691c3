package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flightdeck/internal/notify"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"time"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
)

// pagesResult is bench pages' JSON line.
type pagesResult struct {
	Tasks       int                   `json:"tasks"`
	FillSeconds float64               `json:"fill_seconds"`
	Repeats     int                   `json:"repeats"`
	Routes      map[string]routeTimes `json:"routes"`
	// Over100ms names the routes whose slowest answer took 100 ms or more.
	Over100ms []string `json:"over_100ms"`
	// Missing names routes this build does not serve (not measured).
	Missing []string `json:"missing,omitempty"`
}

type routeTimes struct {
	P50    float64 `json:"p50_ms"`
	Max    float64 `json:"max_ms"`
	Status int     `json:"status"`
}

// runBenchPages: `flightdeck bench pages`. It fills a fresh database with
// --tasks finished tasks of one team (over 11 days; see store.BenchFill),
// then times every page and API list through the real handlers (an
// in-process server, a signed-in user and a token), and prints one JSON line.
func runBenchPages(ctx context.Context, env *cliEnv, args []string) error {
	cfg, err := config.Load(env.getenv)
	if err != nil {
		return err
	}
	fs := newFlagSet("bench pages", env.stderr)
	tasks := fs.Int("tasks", 1000000, "tasks to fill the database with")
	repeats := fs.Int("repeats", 5, "timed requests per route (after one untimed)")
	keep := fs.Bool("keep", false, "keep the filled database (its URL goes to stderr) instead of dropping it")
	filled := fs.String("filled", "", "time against this database, filled and kept by an earlier run (--keep), instead of filling one")
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "server to benchmark on (default: DATABASE_URL or the embedded one)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *tasks < 100 || *repeats < 1 {
		return fmt.Errorf("%w: --tasks must be at least 100, --repeats at least 1", errUsage)
	}
	out := pagesResult{Tasks: *tasks, Repeats: *repeats, Routes: map[string]routeTimes{}, Over100ms: []string{}}
	dbURL, userID, st, done, err := benchPagesDatabase(ctx, env, cfg, *filled, *keep, *tasks, &out)
	if err != nil {
		return err
	}
	defer done()

	// The server as serve builds it: requests on a pool with the
	// statement time-out, no rate limit in the way of the repeats.
	cfg.DatabaseURL, cfg.APIRate = dbURL, 1e6
	web, err := requestStore(ctx, cfg, st)
	if err != nil {
		return err
	}
	defer web.Close()
	catalog, err := pipeline.NewCatalog(pipeline.Builtin()...)
	if err != nil {
		return err
	}
	// Requests are logged only when they go wrong.
	quiet := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e := handlers.New(handlers.Deps{Config: cfg, Store: web, Logger: quiet, Pipelines: catalog, Hub: notify.NewHub()})
	srv := httptest.NewServer(e)
	defer srv.Close()
	routes := map[string]bool{}
	for _, r := range e.Routes() {
		routes[r.Method+" "+r.Path] = true
	}

	sessionSecret, sessionHash := auth.NewSecret("")
	if err := st.SessionCreate(ctx, sessionHash, userID, time.Hour); err != nil {
		return err
	}
	tokenSecret, tokenHash := auth.NewSecret(auth.TokenPrefix)
	if err := st.TokenCreate(ctx, "bench@bench.local", "bench", tokenHash); err != nil {
		return err
	}
	sample, err := benchSampleTask(ctx, srv.URL, tokenSecret)
	if err != nil {
		return err
	}
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -5)
	window := url.Values{"finished_after": {day.Format(time.RFC3339)}, "finished_before": {day.AddDate(0, 0, 1).Format(time.RFC3339)}}
	sparse := url.Values{"state": {"cancelled"}, "pipeline": {"canary"}}
	month := url.Values{"state": {"failed"}, "pipeline": {"web-service"}, "finished_after": {day.AddDate(0, 0, -25).Format(time.RFC3339)}}
	for _, r := range []struct{ route, path string }{
		{"/tasks", "/tasks"},
		{"/tasks", "/tasks?state=failed&pipeline=web-service"},
		{"/tasks", "/tasks?state=failed&pipeline=web-service&" + window.Encode()},
		{"/tasks", "/tasks?" + sparse.Encode()},
		{"/tasks", "/tasks?" + month.Encode()},
		{"/tasks/:id", "/tasks/" + sample},
		{"/dashboard", "/dashboard"},
		{"/approvals", "/approvals"},
		{"/pipelines", "/pipelines"},
		{"/environments", "/environments"},
		{"/webhooks", "/webhooks"},
		{"/api/v1/tasks", "/api/v1/tasks"},
		{"/api/v1/tasks", "/api/v1/tasks?state=completed&pipeline=web-service&limit=200"},
		{"/api/v1/tasks", "/api/v1/tasks?kind=agent&" + window.Encode()},
		{"/api/v1/tasks", "/api/v1/tasks?" + sparse.Encode()},
		{"/api/v1/tasks/:id", "/api/v1/tasks/" + sample},
		{"/api/v1/environments", "/api/v1/environments"},
		{"/api/v1/pipelines", "/api/v1/pipelines"},
		{"/api/v1/webhooks", "/api/v1/webhooks"},
	} {
		if !routes["GET "+r.route] {
			out.Missing = append(out.Missing, r.path)
			continue
		}
		header := http.Header{"Authorization": {"Bearer " + tokenSecret}}
		if !strings.HasPrefix(r.path, "/api/") {
			header = http.Header{"Cookie": {"fd_session=" + sessionSecret}}
		}
		t, err := timeRoute(ctx, srv.URL+r.path, header, *repeats)
		if err != nil {
			return fmt.Errorf("%s: %w", r.path, err)
		}
		out.Routes[r.path] = t
		if t.Max >= 100 || t.Status != http.StatusOK {
			out.Over100ms = append(out.Over100ms, r.path)
		}
	}
	slices.Sort(out.Over100ms)
	return json.NewEncoder(env.stdout).Encode(out)
}

// benchPagesDatabase makes, migrates and fills a fresh database (or opens
// one filled before) and returns its URL, the bench user's id, a store on
// it and what to do when done.
func benchPagesDatabase(ctx context.Context, env *cliEnv, cfg config.Config, filled string, keep bool, n int, out *pagesResult) (
	dbURL, userID string, st *store.Store, done func(), err error) {
	drop := func() {}
	if dbURL = filled; dbURL == "" {
		server, err := benchServerURL(ctx, env, cfg)
		if err != nil {
			return "", "", nil, nil, err
		}
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		if dbURL, drop, err = benchDatabase(ctx, env, server, "fd_bench_pages_"+hex.EncodeToString(b)); err != nil {
			return "", "", nil, nil, err
		}
		if keep {
			env.logger.Info("Keeping the benchmark database", "url", dbURL)
			drop = func() {}
		}
	}
	pool, err := store.Open(ctx, dbURL, 8)
	if err != nil {
		drop()
		return "", "", nil, nil, err
	}
	st = store.New(pool)
	done = func() { st.Close(); drop() }
	if filled != "" {
		u, _, err := st.UserGetByEmail(ctx, "bench@bench.local")
		if err != nil {
			done()
			return "", "", nil, nil, fmt.Errorf("no bench user in %s: %w", filled, err)
		}
		return dbURL, u.ID, st, done, nil
	}
	if err := st.Migrate(ctx, nil); err != nil {
		done()
		return "", "", nil, nil, err
	}
	userID, err = st.UserAdd(ctx, store.UserAddParams{Email: "bench@bench.local", Team: "bench", Role: auth.RoleAdmin})
	if err != nil {
		done()
		return "", "", nil, nil, err
	}
	teamID, err := st.TeamIDByName(ctx, "bench")
	if err != nil {
		done()
		return "", "", nil, nil, err
	}
	start := time.Now()
	if err := benchFill(ctx, env, st, teamID, userID, n); err != nil {
		done()
		return "", "", nil, nil, err
	}
	out.FillSeconds = round(time.Since(start).Seconds(), 1)
	return dbURL, userID, st, done, nil
}

// benchFill fills the database a day at a time, works its rollups and
// environments out of the history (store.RollupRebuild: the fill inserts
// finished tasks, which no write ended) and analyzes it.
func benchFill(ctx context.Context, env *cliEnv, st *store.Store, teamID, userID string, n int) error {
	const days = 11
	chunk := (n + days - 1) / days
	end := time.Now().UTC()
	for from := 1; from <= n; from += chunk {
		to := min(n, from+chunk-1)
		if err := st.BenchFill(ctx, store.BenchFillParams{TeamID: teamID, UserID: userID, From: from, To: to, Total: n,
			End: end, Span: days * 24 * time.Hour, UnfinishedTail: 150}); err != nil {
			return fmt.Errorf("error filling the database: %w", err)
		}
		env.logger.Info("Filling", "tasks", to, "of", n)
	}
	env.logger.Info("Rolling up")
	if err := st.RollupRebuild(ctx, teamID); err != nil {
		return fmt.Errorf("error rolling up the filled tasks: %w", err)
	}
	env.logger.Info("Analyzing")
	return st.Analyze(ctx)
}

// benchSampleTask picks a web-service deploy from the middle of the list
// (a task page with steps and events).
func benchSampleTask(ctx context.Context, base, token string) (string, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/tasks?pipeline=web-service&state=failed&limit=1", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var body struct {
		Tasks []struct {
			ID string `json:"id"`
		} `json:"tasks"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || len(body.Tasks) == 0 {
		return "", fmt.Errorf("no sample task (status %d): %v", res.StatusCode, err)
	}
	return body.Tasks[0].ID, nil
}

// timeRoute gets u once untimed, then repeats times, and returns the
// median and slowest whole answer (body read) in milliseconds.
func timeRoute(ctx context.Context, u string, header http.Header, repeats int) (routeTimes, error) {
	var ms []float64
	status := 0
	for i := range repeats + 1 {
		req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
		if err != nil {
			return routeTimes{}, err
		}
		req.Header = header.Clone()
		t0 := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return routeTimes{}, err
		}
		_, err = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if err != nil {
			return routeTimes{}, err
		}
		if i > 0 {
			ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		}
		status = max(status, res.StatusCode)
	}
	slices.Sort(ms)
	return routeTimes{P50: round(ms[len(ms)/2], 2), Max: round(ms[len(ms)-1], 2), Status: status}, nil
}
