package handlers

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"flightdeck/static"
)

// New builds the HTTP server: the single route table of flightdeck.
func New(d Deps) *echo.Echo {
	h := newHandler(d)
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = h.errorHandler
	// Client addresses (login throttle) are the connection's peer: a
	// client-supplied X-Forwarded-For is not trusted.
	e.IPExtractor = echo.ExtractIPDirect()

	e.Pre(headAsGet(e))
	e.Use(assignRequestID)
	e.Use(traceRequests) // a span per request when tracing is on
	e.Use(h.observe)     // request logger + metrics
	e.Use(h.recoverPanic)
	// Local routes (<app>.<env>.localhost) go to their instance before any auth.
	e.Use(h.localProxy(newLocalRouteCache()))
	// flightdeck's own answers (not the deployed apps' above).
	e.Use(securityHeaders)

	// Probes and metrics: no auth, no team data.
	e.GET("/healthz", h.healthz)
	e.GET("/readyz", h.readyz)
	e.GET("/metrics", h.metricsHandler)
	e.GET("/static/*", echo.WrapHandler(static.Handler()))
	e.GET("/local/ca.crl", h.localCACRL)
	// The API's OpenAPI description: public, like the contract it describes.
	e.GET("/api/v1/openapi.json", h.apiOpenAPI)

	// Browser pages: session cookie + CSRF; a request waits on the database
	// at most RequestTimeout, then answers 503.
	pages := e.Group("", middleware.BodyLimit("1M"), h.deadline, h.authenticate, h.csrf)
	pages.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, "/overview") })
	pages.GET("/login", h.loginShow)
	pages.POST("/login", h.loginSubmit, h.csrfLogin)
	pages.GET("/login/link/:token", h.loginLink)
	// Single sign-on: the callback is a GET from the provider's site, bound
	// to the browser by its state cookie instead of a CSRF token.
	pages.GET("/login/oidc", h.loginOIDC)
	pages.GET("/login/oidc/callback", h.loginOIDCCallback)
	pages.POST("/logout", h.logout, h.rateLimit)

	// Every form a signed-in user posts spends the API's per-user rate
	// (routes_rate_test.go walks this table and fails on one that does not).
	app := pages.Group("", h.requirePageUser)
	app.GET("/tasks", h.taskList)
	app.GET("/tasks/new", h.taskNew)
	app.POST("/tasks", h.taskCreate, h.rateLimit)
	app.GET("/tasks/:id", h.taskShow)
	app.POST("/tasks/:id/resolve", h.taskResolve, h.rateLimit)
	app.POST("/tasks/:id/rerun", h.taskRerun, h.rateLimit)
	app.POST("/tasks/:id/explain", h.taskExplain, h.rateLimit)
	app.GET("/agent", h.agentNew)
	app.POST("/agent", h.agentCreate, h.rateLimit)
	app.GET("/approvals", h.approvalInbox)
	app.POST("/approvals/:task_id/:approval_id", h.approvalDecide, h.rateLimit)
	app.GET("/dashboard", h.dashboardShow)
	app.GET("/pipelines", h.pipelineList)
	app.GET("/overview", h.overviewShow)
	app.GET("/environments", h.environmentList)
	app.GET("/environments/canary", h.environmentCanary)
	app.POST("/environments/promote", h.environmentPromote, h.rateLimit)
	app.POST("/freezes", h.freezeCreate, h.rateLimit)
	app.POST("/freezes/:id/end", h.freezeEnd, h.rateLimit)
	app.GET("/audit", h.auditList)
	app.GET("/account", h.accountShow)
	app.POST("/account", h.accountSave, h.rateLimit)
	app.GET("/webhooks", h.webhookList)
	app.POST("/webhooks", h.webhookCreate, h.rateLimit)
	app.GET("/webhooks/:id", h.webhookShow)
	app.POST("/webhooks/:id/delete", h.webhookDelete, h.rateLimit)
	app.POST("/webhooks/:id/test", h.webhookProbe, h.rateLimit)
	app.POST("/webhooks/:id/deliveries/:delivery_id/redeliver", h.webhookRedeliver, h.rateLimit)

	// JSON API: bearer token or session cookie (+ CSRF header), per-user rate limit.
	api := e.Group("/api/v1", middleware.BodyLimit("1M"), h.deadline, h.authenticate, h.requireAPIUser, h.csrf, h.rateLimit)
	api.GET("/me", h.apiMe)
	api.GET("/me/notifications", h.apiNotifyGet)
	api.PUT("/me/notifications", h.apiNotifyPut)
	api.POST("/tasks", h.apiTaskCreate)
	api.GET("/tasks", h.apiTaskList)
	api.GET("/tasks/:id", h.apiTaskGet)
	api.PATCH("/tasks/:id", h.apiTaskUpdate)
	api.POST("/tasks/:id/cancel", h.apiTaskCancel)
	api.POST("/tasks/:id/pause", h.apiTaskPause)
	api.POST("/tasks/:id/resume", h.apiTaskResume)
	api.GET("/tasks/:id/events", h.apiTaskEvents)
	api.POST("/tasks/:id/resolve", h.apiTaskResolve)
	api.POST("/tasks/:id/rerun", h.apiTaskRerun)
	api.POST("/tasks/:id/approvals/:approval_id/approve", h.apiApprovalApprove)
	api.POST("/tasks/:id/approvals/:approval_id/reject", h.apiApprovalReject)
	api.POST("/tasks/:id/questions/:question_id/answer", h.apiQuestionAnswer)
	api.POST("/tasks/:id/explain", h.apiTaskExplain)
	api.GET("/pipelines", h.apiPipelineList)
	api.GET("/environments", h.apiEnvironmentList)
	api.POST("/environments/promote", h.apiEnvironmentPromote)
	api.POST("/freezes", h.apiFreezeCreate)
	api.GET("/freezes", h.apiFreezeList)
	api.DELETE("/freezes/:id", h.apiFreezeDelete)
	api.GET("/audit", h.apiAuditList)
	api.GET("/artifacts/:id", h.apiArtifactGet)
	api.GET("/artifacts/:id/meta", h.apiArtifactMeta)
	api.POST("/webhooks", h.apiWebhookCreate)
	api.GET("/webhooks", h.apiWebhookList)
	api.DELETE("/webhooks/:id", h.apiWebhookDelete)
	api.GET("/webhooks/:id/deliveries", h.apiWebhookDeliveries)
	api.POST("/webhooks/:id/test", h.apiWebhookProbe)
	api.POST("/webhooks/:id/deliveries/:delivery_id/redeliver", h.apiWebhookRedeliver)

	// Sockets: no body-wrapping middleware around the hijacked connection.
	// The origin is checked first: a foreign page is refused as foreign,
	// signed in or not.
	e.GET("/api/v1/ws", h.wsAPI, h.wsOrigin, h.authenticate, h.requireAPIUser)
	e.GET("/tasks/:id/ws", h.wsTaskHTML, h.wsOrigin, h.authenticate, h.requireAPIUser)
	e.GET("/dashboard/ws", h.wsDashboard, h.wsOrigin, h.authenticate, h.requireAPIUser)
	e.GET("/overview/ws", h.wsOverview, h.wsOrigin, h.authenticate, h.requireAPIUser)
	e.GET("/tasks/ws", h.wsTaskList, h.wsOrigin, h.authenticate, h.requireAPIUser)

	return e
}
