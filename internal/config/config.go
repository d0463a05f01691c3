// Package config loads flightdeck's configuration from the environment.
// Commands apply their flags on top (flags win). Zero values mean the
// documented default, so tests can set only what they care about.
package config

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults. Every duration a test would otherwise wait out is configurable.
const (
	AddrDefault           = ":8080"
	DataDirDefault        = ".data"
	WorkersDefault        = 8
	RoleDefault           = "all"
	GraceDefault          = 30 * time.Second
	MaxPendingDefault     = 1000
	SessionTTLDefault     = 7 * 24 * time.Hour
	APIRateDefault        = 20.0
	WSRateDefault         = 50.0
	LeaseDefault          = 10 * time.Second
	PollIntervalDefault   = 500 * time.Millisecond
	MaxBodyBytesDefault   = 1 << 20
	IdempotencyTTLDefault = 24 * time.Hour
)

// Fail-safe defaults: how long a request waits on the database before it
// answers 503, how long a client may take to send a request, how often open
// sockets look their credentials up again, and the failed-login throttle.
const (
	RequestTimeoutDefault        = 1500 * time.Millisecond
	StatementTimeoutDefault      = time.Second
	ReadTimeoutDefault           = 30 * time.Second
	WSAuthCheckDefault           = 2 * time.Second
	LoginAccountFailuresDefault  = 5
	LoginAddressFailuresDefault  = 20
	LoginFailureWindowDefault    = 5 * time.Minute
	secretMinLenForImplicitNames = 8
)

// Live dashboard defaults (see Config.DashboardCoalesce).
const (
	DashboardCoalesceDefault = 500 * time.Millisecond
	DashboardRefreshDefault  = 10 * time.Second
)

// Config is flightdeck's configuration.
type Config struct {
	DatabaseURL    string        // DATABASE_URL; "" means the embedded cluster under DataDir
	DataDir        string        // FLIGHTDECK_DATA_DIR, default ".data"
	Addr           string        // FLIGHTDECK_ADDR, default ":8080"
	Workers        int           // FLIGHTDECK_WORKERS, default 8
	Role           string        // all | web | worker, default all
	Migrate        bool          // run migrations on serve start (default true; --no-migrate)
	Grace          time.Duration // FLIGHTDECK_GRACE, default 30s
	Dev            bool          // FLIGHTDECK_DEV=1: seed demo team and users
	DevPassword    string        // FLIGHTDECK_DEV_PASSWORD: fixed demo password instead of a random one
	MaxPending     int           // FLIGHTDECK_MAX_PENDING, per team, default 1000
	SessionTTL     time.Duration // FLIGHTDECK_SESSION_TTL, default 7 days
	APIRate        float64       // FLIGHTDECK_API_RATE, requests per second per user, default 20
	WSRate         float64       // FLIGHTDECK_WS_RATE, messages per second per user, default 50
	AllowedOrigins []string      // FLIGHTDECK_ALLOWED_ORIGINS, comma-separated
	Lease          time.Duration // FLIGHTDECK_LEASE, default 10s
	PollInterval   time.Duration // FLIGHTDECK_POLL_INTERVAL, default 500ms
	IdempotencyTTL time.Duration // FLIGHTDECK_IDEMPOTENCY_TTL, default 24h
	PipelinesDir   string        // FLIGHTDECK_PIPELINES; "" means the built-in pipelines only
	BaseURL        string        // FLIGHTDECK_BASE_URL, used in printed links; default derived from Addr
	OpenAIBaseURL  string        // OPENAI_BASE_URL
	OpenAIAPIKey   string        // OPENAI_API_KEY (sent as "dummy" when unset)
	OpenAIModel    string        // OPENAI_MODEL
	// RequestTimeout bounds how long a request (its database work) may take
	// before it answers 503 unavailable: a refused or unresponsive database
	// never hangs a client (FLIGHTDECK_REQUEST_TIMEOUT, default 1.5s).
	// Streams (SSE, sockets, artifact downloads) are bounded only until
	// their first byte.
	RequestTimeout time.Duration
	// StatementTimeout is the database's own bound (statement_timeout) on
	// every statement a web request runs, so a slow query is cancelled in
	// the database, not only abandoned by the request
	// (FLIGHTDECK_STATEMENT_TIMEOUT, default 1s, and never more than
	// RequestTimeout). Workers and migrations use a pool without it.
	StatementTimeout time.Duration
	// ReadTimeout bounds how long a client may take to send a whole request,
	// body included (FLIGHTDECK_READ_TIMEOUT, default 30s); a slow-body
	// client is cut off instead of holding a connection.
	ReadTimeout time.Duration
	// WSAuthCheck is how often open sockets look their token or session up
	// again, so a revoked token or ended session closes them (code 1008)
	// (FLIGHTDECK_WS_AUTH_CHECK, default 2s).
	WSAuthCheck time.Duration
	// Failed password logins are throttled per account and per client
	// address: LoginAccountFailures (FLIGHTDECK_LOGIN_ACCOUNT_FAILURES,
	// default 5) and LoginAddressFailures (FLIGHTDECK_LOGIN_ADDRESS_FAILURES,
	// default 20) failures at once, then as many again per
	// LoginFailureWindow (FLIGHTDECK_LOGIN_FAILURE_WINDOW, default 5m).
	LoginAccountFailures int
	LoginAddressFailures int
	LoginFailureWindow   time.Duration
	// DBDurabilityOff starts the embedded cluster with fsync, synchronous
	// commit and full-page writes off (FLIGHTDECK_DB_DURABILITY=off). Only
	// the test suite's own cluster does this (Taskfile test tasks); a
	// durable cluster that already runs is never switched.
	DBDurabilityOff bool
	// DashboardCoalesce is how long the live dashboard gathers task changes
	// before it re-renders (FLIGHTDECK_DASHBOARD_COALESCE, default 500ms);
	// DashboardRefresh how often it re-renders anyway, for ages, heartbeats
	// and alerts (FLIGHTDECK_DASHBOARD_REFRESH, default 10s).
	DashboardCoalesce time.Duration
	DashboardRefresh  time.Duration
	// ArtifactMaxBytes caps one artifact (FLIGHTDECK_ARTIFACT_MAX_BYTES, default 64 MiB).
	ArtifactMaxBytes int64
	// SecretEnv names server environment variables whose values are secrets
	// (FLIGHTDECK_SECRET_ENV, comma-separated); SecretValues reads them.
	SecretEnv    []string
	secretValues []string
	// LocalMonitorInterval is a new local monitor's probe interval
	// (FLIGHTDECK_LOCAL_MONITOR_INTERVAL, default 30s); LocalMonitorTick how
	// often due monitors are looked for (FLIGHTDECK_LOCAL_MONITOR_TICK, default 1s).
	LocalMonitorInterval time.Duration
	LocalMonitorTick     time.Duration
	// LocalHealthTimeout bounds how long a new demo app may take to say its
	// address and answer /healthz (FLIGHTDECK_LOCAL_HEALTH_TIMEOUT, default
	// 15s): a machine busy with other work (a test run) may need longer.
	LocalHealthTimeout time.Duration
	// LocalTLSAddr also serves local routes over HTTPS (FLIGHTDECK_LOCAL_TLS_ADDR,
	// --local-tls-addr; default "": off).
	LocalTLSAddr string
	// LocalStopOnExit stops the demo apps this process started when it stops
	// (FLIGHTDECK_LOCAL_STOP_ON_EXIT=1; default off: they keep serving and a
	// restarted server adopts them).
	LocalStopOnExit bool
	// Webhooks. WebhookAllow (FLIGHTDECK_WEBHOOK_ALLOW, comma-separated hosts
	// or CIDRs) may be reached although internal. Zero durations mean the
	// defaults of workflow/webhook: FLIGHTDECK_WEBHOOK_SCHEDULE (retry delays,
	// default 5s,30s,2m,10m,1h), FLIGHTDECK_WEBHOOK_EVERY (then every 6h),
	// FLIGHTDECK_WEBHOOK_MAX_AGE (for up to 72h), FLIGHTDECK_WEBHOOK_TIMEOUT
	// (per attempt, 10s).
	WebhookAllow    []string
	WebhookSchedule []time.Duration
	WebhookEvery    time.Duration
	WebhookMaxAge   time.Duration
	WebhookTimeout  time.Duration
	// Retention. Zero durations mean the defaults of workflow/retention:
	// ended webhook deliveries are kept FLIGHTDECK_WEBHOOK_DELIVERY_RETENTION
	// (default 168h), the local provider's effect records
	// FLIGHTDECK_LOCAL_EFFECT_RETENTION after their task ended (default
	// 168h); the cleanup runs every FLIGHTDECK_CLEANUP_INTERVAL (default 10m).
	WebhookDeliveryRetention time.Duration
	LocalEffectRetention     time.Duration
	CleanupInterval          time.Duration
	// The dashboard's figures are folded from the outbox every
	// FLIGHTDECK_ROLLUP_INTERVAL (default 250ms; at once when this process
	// ended tasks): how far behind the dashboards may be. Zero means the
	// default of workflow/rollup.
	RollupInterval time.Duration
	// The http action's circuit breaker per host (contract §6): it opens
	// after FLIGHTDECK_HTTP_BREAKER_THRESHOLD consecutive failures (default
	// 5), half-opens after FLIGHTDECK_HTTP_BREAKER_COOLDOWN (30s) and closes
	// after FLIGHTDECK_HTTP_BREAKER_SUCCESSES successful probes (2). Zero
	// means the default of internal/breaker.
	HTTPBreakerThreshold int
	HTTPBreakerCooldown  time.Duration
	HTTPBreakerSuccesses int
	// Agent tunes agent tasks' budgets and the LLM client (FLIGHTDECK_AGENT_*,
	// FLIGHTDECK_LLM_*; see AgentConfig).
	Agent AgentConfig
	// OIDC is single sign-on (FLIGHTDECK_OIDC_*; see OIDCConfig).
	OIDC OIDCConfig
	// Mail is email over SMTP (FLIGHTDECK_SMTP_*; see MailConfig).
	Mail MailConfig
}

// Load reads the configuration from getenv and validates it.
func Load(getenv func(string) string) (Config, error) {
	var errs []string
	dur := func(name string, def time.Duration) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("%s: want a positive duration like 30s, got %q", name, v))
			return def
		}
		return d
	}
	num := func(name string, def int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Sprintf("%s: want a positive integer, got %q", name, v))
			return def
		}
		return n
	}
	rate := func(name string, def float64) float64 {
		v := getenv(name)
		if v == "" {
			return def
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			errs = append(errs, fmt.Sprintf("%s: want a positive number, got %q", name, v))
			return def
		}
		return f
	}
	c := Config{
		DatabaseURL:    getenv("DATABASE_URL"),
		DataDir:        cmp.Or(getenv("FLIGHTDECK_DATA_DIR"), DataDirDefault),
		Addr:           cmp.Or(getenv("FLIGHTDECK_ADDR"), AddrDefault),
		Workers:        num("FLIGHTDECK_WORKERS", WorkersDefault),
		Role:           RoleDefault,
		Migrate:        true,
		Grace:          dur("FLIGHTDECK_GRACE", GraceDefault),
		Dev:            isTrue(getenv("FLIGHTDECK_DEV")),
		DevPassword:    getenv("FLIGHTDECK_DEV_PASSWORD"),
		MaxPending:     num("FLIGHTDECK_MAX_PENDING", MaxPendingDefault),
		SessionTTL:     dur("FLIGHTDECK_SESSION_TTL", SessionTTLDefault),
		APIRate:        rate("FLIGHTDECK_API_RATE", APIRateDefault),
		WSRate:         rate("FLIGHTDECK_WS_RATE", WSRateDefault),
		AllowedOrigins: splitList(getenv("FLIGHTDECK_ALLOWED_ORIGINS")),
		Lease:          dur("FLIGHTDECK_LEASE", LeaseDefault),
		PollInterval:   dur("FLIGHTDECK_POLL_INTERVAL", PollIntervalDefault),
		IdempotencyTTL: dur("FLIGHTDECK_IDEMPOTENCY_TTL", IdempotencyTTLDefault),
		PipelinesDir:   getenv("FLIGHTDECK_PIPELINES"),
		BaseURL:        getenv("FLIGHTDECK_BASE_URL"),
		OpenAIBaseURL:  getenv("OPENAI_BASE_URL"),
		OpenAIAPIKey:   getenv("OPENAI_API_KEY"),
		OpenAIModel:    getenv("OPENAI_MODEL"),
		SecretEnv:      splitList(getenv("FLIGHTDECK_SECRET_ENV")),
	}
	c.RequestTimeout = dur("FLIGHTDECK_REQUEST_TIMEOUT", RequestTimeoutDefault)
	c.StatementTimeout = dur("FLIGHTDECK_STATEMENT_TIMEOUT", min(StatementTimeoutDefault, c.RequestTimeout))
	if c.StatementTimeout > c.RequestTimeout {
		errs = append(errs, fmt.Sprintf("FLIGHTDECK_STATEMENT_TIMEOUT: %s is longer than FLIGHTDECK_REQUEST_TIMEOUT (%s)", c.StatementTimeout, c.RequestTimeout))
	}
	c.ReadTimeout = dur("FLIGHTDECK_READ_TIMEOUT", ReadTimeoutDefault)
	c.WSAuthCheck = dur("FLIGHTDECK_WS_AUTH_CHECK", WSAuthCheckDefault)
	c.LoginAccountFailures = num("FLIGHTDECK_LOGIN_ACCOUNT_FAILURES", LoginAccountFailuresDefault)
	c.LoginAddressFailures = num("FLIGHTDECK_LOGIN_ADDRESS_FAILURES", LoginAddressFailuresDefault)
	c.LoginFailureWindow = dur("FLIGHTDECK_LOGIN_FAILURE_WINDOW", LoginFailureWindowDefault)
	switch v := getenv("FLIGHTDECK_DB_DURABILITY"); v {
	case "", "on":
	case "off":
		c.DBDurabilityOff = true
	default:
		errs = append(errs, fmt.Sprintf("FLIGHTDECK_DB_DURABILITY: want on or off, got %q", v))
	}
	c.DashboardCoalesce = dur("FLIGHTDECK_DASHBOARD_COALESCE", DashboardCoalesceDefault)
	c.DashboardRefresh = dur("FLIGHTDECK_DASHBOARD_REFRESH", DashboardRefreshDefault)
	c.ArtifactMaxBytes = int64(num("FLIGHTDECK_ARTIFACT_MAX_BYTES", 64<<20))
	c.LocalMonitorInterval = dur("FLIGHTDECK_LOCAL_MONITOR_INTERVAL", 30*time.Second)
	c.LocalMonitorTick = dur("FLIGHTDECK_LOCAL_MONITOR_TICK", time.Second)
	c.LocalHealthTimeout = dur("FLIGHTDECK_LOCAL_HEALTH_TIMEOUT", 0)
	c.LocalTLSAddr = getenv("FLIGHTDECK_LOCAL_TLS_ADDR")
	c.LocalStopOnExit = isTrue(getenv("FLIGHTDECK_LOCAL_STOP_ON_EXIT"))
	c.WebhookAllow = splitList(getenv("FLIGHTDECK_WEBHOOK_ALLOW"))
	for _, v := range splitList(getenv("FLIGHTDECK_WEBHOOK_SCHEDULE")) {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Sprintf("FLIGHTDECK_WEBHOOK_SCHEDULE: want positive durations like 5s,30s, got %q", v))
			break
		}
		c.WebhookSchedule = append(c.WebhookSchedule, d)
	}
	c.WebhookEvery = dur("FLIGHTDECK_WEBHOOK_EVERY", 0)
	c.WebhookMaxAge = dur("FLIGHTDECK_WEBHOOK_MAX_AGE", 0)
	c.WebhookTimeout = dur("FLIGHTDECK_WEBHOOK_TIMEOUT", 0)
	c.WebhookDeliveryRetention = dur("FLIGHTDECK_WEBHOOK_DELIVERY_RETENTION", 0)
	c.LocalEffectRetention = dur("FLIGHTDECK_LOCAL_EFFECT_RETENTION", 0)
	c.CleanupInterval = dur("FLIGHTDECK_CLEANUP_INTERVAL", 0)
	c.RollupInterval = dur("FLIGHTDECK_ROLLUP_INTERVAL", 0)
	c.HTTPBreakerThreshold = num("FLIGHTDECK_HTTP_BREAKER_THRESHOLD", 0)
	c.HTTPBreakerCooldown = dur("FLIGHTDECK_HTTP_BREAKER_COOLDOWN", 0)
	c.HTTPBreakerSuccesses = num("FLIGHTDECK_HTTP_BREAKER_SUCCESSES", 0)
	agent, agentErrs := loadAgent(getenv)
	c.Agent = agent
	errs = append(errs, agentErrs...)
	oidc, oidcErrs := loadOIDC(getenv)
	c.OIDC = oidc
	errs = append(errs, oidcErrs...)
	mail, mailErrs := loadMail(getenv)
	c.Mail = mail
	errs = append(errs, mailErrs...)
	if mail.Password != "" {
		c.secretValues = append(c.secretValues, mail.Password)
	}
	for _, name := range c.SecretEnv {
		if v := getenv(name); v != "" {
			c.secretValues = append(c.secretValues, v)
		}
	}
	// flightdeck's own secrets are redacted too; a value too short to be a
	// real secret would only blot out ordinary output.
	for _, name := range ownSecretEnv {
		if v := getenv(name); len(v) >= secretMinLenForImplicitNames {
			c.secretValues = append(c.secretValues, v)
		}
	}
	c.secretValues = c.WithSecrets(DatabasePassword(c.DatabaseURL)).secretValues
	if len(errs) > 0 {
		return c, fmt.Errorf("invalid configuration: %s", strings.Join(errs, "; "))
	}
	return c, c.Validate()
}

// Validate checks values that flags may have changed after Load.
func (c Config) Validate() error {
	switch c.Role {
	case "all", "web", "worker":
	default:
		return fmt.Errorf("invalid role %q: want all, web or worker", c.Role)
	}
	if c.Workers <= 0 || c.Workers > 10000 {
		return fmt.Errorf("invalid worker count %d: want 1..10000", c.Workers)
	}
	if c.Addr == "" {
		return fmt.Errorf("empty listen address")
	}
	return nil
}

// PublicURL is the base URL people reach this server at, for printed links.
func (c Config) PublicURL() string {
	if c.BaseURL != "" {
		return strings.TrimRight(c.BaseURL, "/")
	}
	host, port, ok := strings.Cut(c.Addr, ":")
	if !ok {
		return "http://" + c.Addr
	}
	if host == "" || host == "0.0.0.0" || host == "::" || host == "[::]" {
		host = "localhost"
	}
	return "http://" + host + ":" + port
}

func isTrue(s string) bool {
	b, err := strconv.ParseBool(s)
	return err == nil && b
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// ownSecretEnv are flightdeck's own secret variables besides DATABASE_URL
// (whose password is taken apart): never handed to exec steps, and their
// values redacted wherever output leaves the worker.
var ownSecretEnv = []string{"DATABASE_URL", "OPENAI_API_KEY", "FLIGHTDECK_DEV_PASSWORD", "FLIGHTDECK_TOKEN", "FLIGHTDECK_OIDC_CLIENT_SECRET"}

// SecretValues are the values of the FLIGHTDECK_SECRET_ENV variables and of
// flightdeck's own secrets, to redact wherever output leaves the worker.
func (c Config) SecretValues() []string { return c.secretValues }

// WithSecrets returns c with more values to redact (e.g. the embedded
// database's generated password); empty or short ones are skipped.
func (c Config) WithSecrets(values ...string) Config {
	out := slices.Clone(c.secretValues)
	for _, v := range values {
		if len(v) >= secretMinLenForImplicitNames && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	c.secretValues = out
	return c
}

// DatabasePassword returns the password in a postgres:// URL, or "".
func DatabasePassword(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil || u.User == nil {
		return ""
	}
	pw, _ := u.User.Password()
	return pw
}

// AgentsEnabled: agent tasks need an OpenAI-compatible server.
func (c Config) AgentsEnabled() bool { return c.OpenAIBaseURL != "" || c.OpenAIAPIKey != "" }
