// Package config loads flightdeck's configuration from the environment.
// Commands apply their flags on top (flags win). Zero values mean the
// documented default, so tests can set only what they care about.
package config

import (
	"cmp"
	"fmt"
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
	// Agent tunes agent tasks' budgets and the LLM client (FLIGHTDECK_AGENT_*,
	// FLIGHTDECK_LLM_*; see AgentConfig).
	Agent AgentConfig
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
	c.DashboardCoalesce = dur("FLIGHTDECK_DASHBOARD_COALESCE", DashboardCoalesceDefault)
	c.DashboardRefresh = dur("FLIGHTDECK_DASHBOARD_REFRESH", DashboardRefreshDefault)
	c.ArtifactMaxBytes = int64(num("FLIGHTDECK_ARTIFACT_MAX_BYTES", 64<<20))
	c.LocalMonitorInterval = dur("FLIGHTDECK_LOCAL_MONITOR_INTERVAL", 30*time.Second)
	c.LocalMonitorTick = dur("FLIGHTDECK_LOCAL_MONITOR_TICK", time.Second)
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
	agent, agentErrs := loadAgent(getenv)
	c.Agent = agent
	errs = append(errs, agentErrs...)
	for _, name := range c.SecretEnv {
		if v := getenv(name); v != "" {
			c.secretValues = append(c.secretValues, v)
		}
	}
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

// SecretValues are the values of the FLIGHTDECK_SECRET_ENV variables, to
// redact wherever output leaves the worker.
func (c Config) SecretValues() []string { return c.secretValues }

// AgentsEnabled: agent tasks need an OpenAI-compatible server.
func (c Config) AgentsEnabled() bool { return c.OpenAIBaseURL != "" || c.OpenAIAPIKey != "" }
