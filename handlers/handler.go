// Package handlers is flightdeck's web layer: the one route table, page and
// JSON API handlers, sockets, and the middleware around them. It is the only
// package that imports echo and websocket.
package handlers

import (
	"cmp"
	"flightdeck/internal/notify"
	"log/slog"
	"net/http"
	"time"

	"flightdeck/internal/config"
	"flightdeck/internal/metrics"
	"flightdeck/internal/ratelimit"
	"flightdeck/internal/sso"
	"flightdeck/store"
	"flightdeck/workflow/action/local"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/webhook"
)

// Deps are what the handlers need from the rest of flightdeck.
type Deps struct {
	Config    config.Config
	Store     *store.Store
	Logger    *slog.Logger
	Registry  *metrics.Registry // metrics are registered here and served at /metrics
	Pipelines *pipeline.Catalog // default: the built-in pipelines
	Hub       *notify.Hub       // wakes live event streams; default: one fed by this process's writes only
	// WebhookGuard checks webhook URLs (SSRF); default: Config.WebhookAllow
	// with the system resolver.
	WebhookGuard *webhook.Guard
	// SSO is the OpenID Connect provider when FLIGHTDECK_OIDC_ISSUER is set
	// (its discovery read at start); nil: password and link logins only.
	SSO *sso.Client
	// LocalStats records the local proxy's requests for the analysis
	// action's proxy provider; default: local.DefaultProxyStats.
	LocalStats *local.ProxyStats
}

// Handler carries the dependencies of every handler.
type Handler struct {
	cfg        config.Config
	store      *store.Store
	logger     *slog.Logger
	metrics    *httpMetrics
	reg        *metrics.Registry
	apiRate    *ratelimit.Limiter // per user: the API and every form
	wsRate     *ratelimit.Limiter
	pipelines  *pipeline.Catalog
	hub        *notify.Hub
	localStats *local.ProxyStats
	teamFeed   *teamFeed
	dashFeed   *dashboardFeed
	// overviewFeed nudges open overviews to fetch their grid again after
	// their teams' task changes (the grid is the viewer's: their buttons)
	overviewFeed *dashboardFeed
	runModels    *runModels // run pages' models, for their sockets to resume from

	webhookGuard *webhook.Guard
	crossOrigin  *http.CrossOriginProtection
	// Failed password logins, per account and per client address.
	loginAccount *ratelimit.Limiter
	loginAddress *ratelimit.Limiter
	// Failed bearer tokens per client address and per token hash (the
	// API's rate each): only failures spend them, so a valid token always
	// gets through; a token that keeps failing is refused without a lookup.
	badTokens      *ratelimit.Limiter
	badTokenHashes *ratelimit.Limiter
	sockets        socketAuth
	sso            *sso.Client
}

func newHandler(d Deps) *Handler {
	logger := d.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := d.Registry
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	pipelines := d.Pipelines
	if pipelines == nil {
		pipelines, _ = pipeline.NewCatalog(pipeline.Builtin()...)
	}
	hub := d.Hub
	if hub == nil {
		// fed by this process's own writes only: no LISTEN connection
		hub = notify.NewHub()
		hub.Follow(d.Store.Wakeups())
	}
	h := &Handler{
		pipelines:      pipelines,
		hub:            hub,
		cfg:            d.Config,
		sso:            d.SSO,
		store:          d.Store,
		logger:         logger,
		metrics:        newHTTPMetrics(reg),
		runModels:      newRunModels(),
		localStats:     cmp.Or(d.LocalStats, local.DefaultProxyStats),
		reg:            reg,
		apiRate:        ratelimit.New(cmp.Or(d.Config.APIRate, config.APIRateDefault)),
		wsRate:         ratelimit.New(cmp.Or(d.Config.WSRate, config.WSRateDefault)),
		badTokens:      ratelimit.New(cmp.Or(d.Config.APIRate, config.APIRateDefault)),
		badTokenHashes: ratelimit.New(cmp.Or(d.Config.APIRate, config.APIRateDefault)),
	}
	h.sockets.h = h
	window := cmp.Or(d.Config.LoginFailureWindow, config.LoginFailureWindowDefault)
	h.loginAccount = ratelimit.NewPerWindow(cmp.Or(d.Config.LoginAccountFailures, config.LoginAccountFailuresDefault), window)
	h.loginAddress = ratelimit.NewPerWindow(cmp.Or(d.Config.LoginAddressFailures, config.LoginAddressFailuresDefault), window)
	h.crossOrigin = http.NewCrossOriginProtection()
	for _, o := range d.Config.AllowedOrigins {
		if err := h.crossOrigin.AddTrustedOrigin(o); err != nil {
			logger.Error("Ignoring an entry of FLIGHTDECK_ALLOWED_ORIGINS", "origin", o, "error", err)
		}
	}
	h.teamFeed = newTeamFeed(d.Store, h.pipelines, hub, logger, reg)
	h.dashFeed = newDashboardFeed(h, reg)
	h.overviewFeed = newPageFeed(h, reg, renderOverviewNudge, "flightdeck_ws_overview_nudges_total",
		"Overview nudges sent (one per team set and batch of changes): each open overview then fetches its grid again.")
	h.webhookGuard = d.WebhookGuard
	if h.webhookGuard == nil {
		var err error
		if h.webhookGuard, err = webhook.NewGuard(d.Config.WebhookAllow, nil); err != nil {
			logger.Error("Ignoring FLIGHTDECK_WEBHOOK_ALLOW", "error", err)
			h.webhookGuard, _ = webhook.NewGuard(nil, nil)
		}
	}
	return h
}

// requestTimeout bounds a request's wait on the database (config
// RequestTimeout): past it the answer is 503, never a hang.
func (h *Handler) requestTimeout() time.Duration {
	return cmp.Or(h.cfg.RequestTimeout, config.RequestTimeoutDefault)
}
