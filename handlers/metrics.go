package handlers

import (
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// slowSockets counts sockets closed because their client stopped
	// reading (1008): a sign of clients or a network that cannot keep up.
	slowSockets prometheus.Counter
	// runEvents counts the events run pages and their sockets read to fold:
	// a socket that resumes from its page's model reads only the new ones.
	runEvents prometheus.Counter
}

func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	return &httpMetrics{
		requests: registered(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightdeck_http_requests_total", Help: "HTTP requests by method, route pattern and status.",
		}, []string{"method", "route", "code"})),
		duration: registered(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flightdeck_http_request_duration_seconds", Help: "HTTP request latency by method and route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"})),
		slowSockets: registered(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flightdeck_websocket_slow_closed_total", Help: "WebSockets closed because the client stopped reading.",
		})),
		runEvents: registered(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "flightdeck_run_page_events_read_total", Help: "Task events the run page and its socket read from the database to show.",
		})),
	}
}

// registered registers c, or returns the one already registered (a
// registry shared by two servers, in tests, already has it).
func registered[C prometheus.Collector](reg *prometheus.Registry, c C) C {
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
	}
	return c
}

func (h *Handler) metricsHandler(c echo.Context) error {
	promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}
