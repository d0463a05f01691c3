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
}

func newHTTPMetrics(reg *prometheus.Registry) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "flightdeck_http_requests_total", Help: "HTTP requests by method, route pattern and status.",
		}, []string{"method", "route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "flightdeck_http_request_duration_seconds", Help: "HTTP request latency by method and route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
	}
	m.slowSockets = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "flightdeck_websocket_slow_closed_total", Help: "WebSockets closed because the client stopped reading.",
	})
	// A registry shared by two servers (tests) already has them: reuse.
	if err := reg.Register(m.slowSockets); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			m.slowSockets = are.ExistingCollector.(prometheus.Counter)
		}
	}
	if err := reg.Register(m.requests); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			m.requests = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	if err := reg.Register(m.duration); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			m.duration = are.ExistingCollector.(*prometheus.HistogramVec)
		}
	}
	return m
}

func (h *Handler) metricsHandler(c echo.Context) error {
	promhttp.HandlerFor(h.reg, promhttp.HandlerOpts{}).ServeHTTP(c.Response(), c.Request())
	return nil
}
