package main

import (
	"cmp"
	"context"
	"errors"
	"flightdeck/internal/notify"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"flightdeck/handlers"
	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/internal/metrics"
	"flightdeck/internal/sso"
	"flightdeck/store"
	"flightdeck/workflow/action/local"
	"flightdeck/workflow/mail"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/retention"
	"flightdeck/workflow/rollup"
	"flightdeck/workflow/webhook"
)

func mailConfig(cfg config.Config, catalog *pipeline.Catalog, env *cliEnv) mail.Config {
	m := cfg.Mail
	return mail.Config{Server: mail.Server{Host: m.Host, Port: m.Port, Username: m.Username, Password: m.Password, TLS: m.TLS, From: m.From},
		Timeout: m.Timeout, Poll: cfg.PollInterval, BaseURL: cfg.PublicURL(), Pipelines: catalog, Logger: env.logger}
}

func webhookConfig(cfg config.Config, guard *webhook.Guard, catalog *pipeline.Catalog, env *cliEnv) webhook.Config {
	return webhook.Config{Guard: guard, Timeout: cfg.WebhookTimeout, Poll: cfg.PollInterval, Logger: env.logger,
		Pipelines: catalog, BaseURL: cfg.PublicURL(),
		Schedule: webhook.Schedule{Steps: cfg.WebhookSchedule, Every: cfg.WebhookEvery, MaxAge: cfg.WebhookMaxAge}}
}

func runServe(ctx context.Context, env *cliEnv, args []string) error {
	cfg, err := config.Load(env.getenv)
	if err != nil {
		return err
	}
	fs := newFlagSet("serve", env.stderr)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address")
	fs.IntVar(&cfg.Workers, "workers", cfg.Workers, "worker pool size")
	fs.StringVar(&cfg.Role, "role", cfg.Role, "all, web or worker")
	fs.DurationVar(&cfg.Grace, "grace", cfg.Grace, "how long running steps may finish on SIGTERM")
	fs.StringVar(&cfg.LocalTLSAddr, "local-tls-addr", cfg.LocalTLSAddr, "also serve local routes over HTTPS here (certificates of the local CA)")
	noMigrate := fs.Bool("no-migrate", false, "do not run migrations on start")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg.Migrate = !*noMigrate
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	// Single sign-on: the provider's discovery document is read now, so a
	// wrong issuer stops serve at once instead of failing people later.
	var ssoClient *sso.Client
	if cfg.OIDC.Enabled() {
		if ssoClient, err = sso.New(ctx, cfg.OIDC, cfg.OIDCRedirectURL()); err != nil {
			return fmt.Errorf("FLIGHTDECK_OIDC_ISSUER: %w", err)
		}
		env.logger.Info("Single sign-on enabled", "issuer", cfg.OIDC.Issuer, "redirect_uri", cfg.OIDCRedirectURL())
	}
	stopTracing, err := startTracing(ctx, env)
	if err != nil {
		return err
	}
	defer stopTracing()

	// The embedded database's generated password is a secret like
	// DATABASE_URL's: redacted wherever output leaves a worker.
	if cfg.DatabaseURL, err = databaseURL(ctx, env, cfg); err != nil {
		return err
	}
	cfg = cfg.WithSecrets(config.DatabasePassword(cfg.DatabaseURL))
	st, err := openStore(ctx, env, cfg, int32(max(10, cfg.Workers+8)))
	if err != nil {
		return err
	}
	defer st.Close()
	if cfg.Migrate {
		if err := st.Migrate(ctx, env.logger); err != nil {
			return err
		}
	}
	if cfg.Dev {
		if err := seedDemo(ctx, env, cfg, st); err != nil {
			return err
		}
	}

	catalog, err := loadCatalog(cfg)
	if err != nil {
		return err
	}
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewGoCollector(), metrics.NewProcessCollector())

	// One LISTEN connection per process feeds the Hub (live streams) and
	// the pool (wake-ups, cancels); this process's own writes wake its
	// streams at once (Follow).
	listener := notify.NewListener(st, env.logger)
	hub := notify.NewHub()
	hub.Attach(listener)
	defer hub.Follow(st.Wakeups())()
	bgCtx, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	var pool *queue.Pool
	var lp *local.Provider
	if cfg.Role != "web" {
		// Local instances run on worker nodes: adopt or restart this node's
		// before claiming tasks, then keep their monitors probing.
		lp, err = localProvider(cfg, st, env.logger)
		if err != nil {
			return err
		}
		if _, err := lp.Recover(ctx); err != nil {
			return fmt.Errorf("error recovering local instances: %w", err)
		}
		go lp.RunMonitors(bgCtx) //nolint:errcheck // returns when bgCtx ends
		if cfg.LocalStopOnExit {
			defer lp.StopAll() // when serve returns, after the pool stopped
		}
		pool = queue.New(st, taskHandlers(cfg, st, catalog, env.logger, lp), queue.Config{
			Workers: cfg.Workers, Lease: cfg.Lease, PollInterval: cfg.PollInterval, Grace: cfg.Grace,
			IdempotencyTTL: cfg.IdempotencyTTL, Logger: env.logger,
		})
		pool.Attach(listener)
	}
	guard, err := webhook.NewGuard(cfg.WebhookAllow, nil)
	if err != nil {
		return err
	}
	go listener.Run(bgCtx) //nolint:errcheck // returns when bgCtx ends
	// Retention: every process prunes; the batches skip each other's rows.
	go retention.New(st, retention.Config{Interval: cfg.CleanupInterval, WebhookDeliveries: cfg.WebhookDeliveryRetention,
		LocalEffects: cfg.LocalEffectRetention, Logger: env.logger}).Run(bgCtx) //nolint:errcheck // returns when bgCtx ends
	// The dashboard's figures: every process runs the fold; the one holding
	// its cursor folds, the others skip their turn.
	go rollup.NewFolder(st, rollup.FoldConfig{Interval: cfg.RollupInterval, Logger: env.logger}).Run(bgCtx) //nolint:errcheck // returns when bgCtx ends
	if cfg.Role != "web" {                                                                                  // webhooks: outbox dispatcher + delivery sender
		go webhook.New(st, hub, webhookConfig(cfg, guard, catalog, env)).Run(bgCtx) //nolint:errcheck // returns when bgCtx ends
		if cfg.Mail.Enabled() {                                                     // email: outbox dispatcher + SMTP sender (contract §12)
			go mail.New(st, hub, mailConfig(cfg, catalog, env)).Run(bgCtx) //nolint:errcheck // returns when bgCtx ends
		}
	}

	web, err := requestStore(ctx, cfg, st)
	if err != nil {
		return err
	}
	defer web.Close()
	e := handlers.New(handlers.Deps{Config: cfg, Store: web, Logger: env.logger, Registry: reg, Pipelines: catalog, Hub: hub, WebhookGuard: guard, SSO: ssoClient})

	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("error listening on %s: %w", cfg.Addr, err)
	}
	// Request contexts derive from reqCtx, cancelled when shutdown starts, so
	// long-lived streams (SSE, WebSocket) end instead of holding Shutdown.
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	if lp != nil { // the analysis action's load goes through this listener
		lp.SetProxyURL(loopbackURL(ln.Addr()))
	}
	srv := newHTTPServer(cfg, e, reqCtx)
	srv.RegisterOnShutdown(cancelRequests)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	poolDone := make(chan struct{})
	go func() {
		defer close(poolDone)
		if pool != nil {
			_ = pool.Run(ctx) // returns after its graceful stop once ctx ends
		}
	}()
	env.logger.Info("Serving", "addr", ln.Addr().String(), "role", cfg.Role, "workers", cfg.Workers, "url", cfg.PublicURL())
	if cfg.LocalTLSAddr != "" {
		tlsAddr, stopTLS, err := serveLocalTLS(cfg.LocalTLSAddr, st, e, env.logger)
		if err != nil {
			return err
		}
		defer stopTLS(context.Background())
		env.logger.Info("Serving local routes over HTTPS", "addr", tlsAddr)
	}

	select {
	case err := <-errc:
		stopBG()
		return fmt.Errorf("server stopped: %w", err)
	case <-ctx.Done():
	}
	env.logger.Info("Shutting down", "grace", cfg.Grace)
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.Grace)
	defer cancel()
	// Live streams end with the request contexts; the pool finishes or
	// hands back its tasks within the grace period.
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		env.logger.Warn("HTTP shutdown incomplete", "error", err)
	}
	<-poolDone
	env.logger.Info("Stopped")
	return nil
}

// seedDemo creates team demo (FLIGHTDECK_DEV=1): an admin, two approvers
// (production's two reviewers can be found whoever deploys, the creator
// left out) and a deployer,
// and prints their passwords and a one-time login link. Passwords are made
// once per data folder and kept there (demoPasswords), so a restart prints
// the ones a person already noted; FLIGHTDECK_DEV_PASSWORD fixes them instead.
func seedDemo(ctx context.Context, env *cliEnv, cfg config.Config, st *store.Store) error {
	users := []struct {
		email string
		role  auth.Role
	}{{"admin@demo.local", auth.RoleAdmin}, {"approver@demo.local", auth.RoleApprover}, {"reviewer@demo.local", auth.RoleApprover},
		{"dev@demo.local", auth.RoleDeployer}}
	kept := map[string]string{}
	if cfg.DevPassword == "" {
		emails := make([]string, len(users))
		for i, u := range users {
			emails[i] = u.email
		}
		var err error
		if kept, err = demoPasswords(filepath.Join(cfg.DataDir, demoPasswordFile), emails); err != nil {
			return err
		}
	}
	fmt.Fprintln(env.stdout, "Demo team \"demo\" (FLIGHTDECK_DEV=1):")
	var adminID string
	for _, u := range users {
		pw := cmp.Or(cfg.DevPassword, kept[u.email])
		hash, err := auth.HashPassword(pw)
		if err != nil {
			return fmt.Errorf("FLIGHTDECK_DEV_PASSWORD: %w", err)
		}
		id, err := st.UserAdd(ctx, store.UserAddParams{Email: u.email, Team: "demo", Role: u.role, PasswordHash: hash})
		if err != nil {
			return fmt.Errorf("error seeding %s: %w", u.email, err)
		}
		if u.role == auth.RoleAdmin {
			adminID = id
		}
		fmt.Fprintf(env.stdout, "  %-22s %-9s password: %s\n", u.email, u.role, pw)
	}
	secret, hash := auth.NewSecret("")
	if err := st.LoginLinkCreate(ctx, hash, adminID, time.Hour); err != nil {
		return err
	}
	fmt.Fprintf(env.stdout, "  Log in as admin: %s/login/link/%s (one use, 1 hour)\n", cfg.PublicURL(), secret)
	if cfg.DevPassword == "" {
		fmt.Fprintf(env.stdout, "  (the passwords stay the same at every start; they are kept in %s)\n", filepath.Join(cfg.DataDir, demoPasswordFile))
	}
	return nil
}

// demoPasswordFile, under the data folder, keeps the demo users' passwords.
const demoPasswordFile = "demo-passwords"

// demoPasswords reads the demo users' passwords from path ("email
// password" lines), making and adding one for each email it lacks. The
// file is the owner's only (0600), like the database's password beside it.
func demoPasswords(path string, emails []string) (map[string]string, error) {
	kept := map[string]string{}
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("error reading the demo passwords: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if email, pw, ok := strings.Cut(strings.TrimSpace(line), " "); ok && pw != "" {
			kept[email] = pw
		}
	}
	missing := false
	for _, e := range emails {
		if kept[e] == "" {
			kept[e], missing = auth.NewPassword(), true
		}
	}
	if !missing {
		return kept, nil
	}
	var out strings.Builder
	for _, e := range emails {
		fmt.Fprintf(&out, "%s %s\n", e, kept[e])
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("error keeping the demo passwords: %w", err)
	}
	if err := os.WriteFile(path, []byte(out.String()), 0o600); err != nil {
		return nil, fmt.Errorf("error keeping the demo passwords: %w", err)
	}
	return kept, nil
}

// newHTTPServer is the server of the UI, API and sockets: request contexts
// derive from base. ReadTimeout bounds how long a client may take to send
// its whole request, body included, so a slow-body client cannot hold a
// connection; streams are not cut by it (the server clears the read
// deadline once a request is read, and a hijacked socket has none).
func newHTTPServer(cfg config.Config, h http.Handler, base context.Context) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ReadTimeout: cmp.Or(cfg.ReadTimeout, config.ReadTimeoutDefault),
		BaseContext: func(net.Listener) context.Context { return base }}
}

// loopbackURL is the http:// URL of a listener bound to addr, through
// 127.0.0.1 when it listens on every address.
func loopbackURL(addr net.Addr) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return ""
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
