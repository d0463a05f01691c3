package handlers

import (
	"github.com/labstack/echo/v4"

	"flightdeck/internal/metrics"
)

type httpMetrics struct {
	requests *metrics.CounterVec
	duration *metrics.HistogramVec
	// slowSockets counts sockets closed because their client stopped
	// reading (1008): a sign of clients or a network that cannot keep up.
	slowSockets *metrics.Counter
	// runEvents counts the events run pages and their sockets read to fold:
	// a socket that resumes from its page's model reads only the new ones.
	runEvents *metrics.Counter
	// local proxy (contract §11): what a Prometheus scraping flightdeck
	// answers a canary analysis's queries from.
	localRequests *metrics.CounterVec
	localDuration *metrics.HistogramVec
}

// newHTTPMetrics registers the web layer's metrics, or takes the ones
// already registered (a registry shared by two servers, in tests).
func newHTTPMetrics(reg *metrics.Registry) *httpMetrics {
	return &httpMetrics{
		requests: metrics.Registered(reg, metrics.NewCounterVec("flightdeck_http_requests_total",
			"HTTP requests by method, route pattern and status.", []string{"method", "route", "code"})),
		duration: metrics.Registered(reg, metrics.NewHistogramVec("flightdeck_http_request_duration_seconds",
			"HTTP request latency by method and route pattern.", metrics.DefBuckets, []string{"method", "route"})),
		slowSockets: metrics.Registered(reg, metrics.NewCounter("flightdeck_websocket_slow_closed_total",
			"WebSockets closed because the client stopped reading.")),
		runEvents: metrics.Registered(reg, metrics.NewCounter("flightdeck_run_page_events_read_total",
			"Task events the run page and its socket read from the database to show.")),
		localRequests: metrics.Registered(reg, metrics.NewCounterVec("flightdeck_local_proxy_requests_total",
			"Requests the local proxy sent to an instance, by route host, instance version and status class.", []string{"host", "version", "code"})),
		localDuration: metrics.Registered(reg, metrics.NewHistogramVec("flightdeck_local_proxy_request_duration_seconds",
			"Latency of requests through the local proxy, by route host and instance version.", metrics.DefBuckets, []string{"host", "version"})),
	}
}

func (h *Handler) metricsHandler(c echo.Context) error {
	h.reg.ServeHTTP(c.Response(), c.Request())
	return nil
}
