package handlers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"

	"flightdeck/store"
	"flightdeck/workflow/action/local"
)

// localRouteTTL: how long a serve process trusts what it read about a route;
// every process reads the same rows, so all route alike within this delay.
const localRouteTTL = 2 * time.Second

// localProxy sends a request whose Host names a local route
// (<app>.<env>[.localhost][:port]) to the route's current instance, answers
// 503 while the route has none, and 404 for an unknown *.localhost route.
// Other hosts reach the app.
func (h *Handler) localProxy(routes *localRouteCache) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			host := local.RouteHost(r.Host)
			if host == "" {
				return next(c)
			}
			t, found, err := routes.get(r.Context(), h.store, host)
			if err != nil {
				return err
			}
			if !found {
				if hostname(r.Host) != host { // asked for <x>.localhost
					return c.String(http.StatusNotFound, fmt.Sprintf("no route for %s\n", host))
				}
				return next(c)
			}
			if t.InstanceID == "" {
				return c.String(http.StatusServiceUnavailable, fmt.Sprintf("no instance serves %s yet\n", host))
			}
			var fallback *store.LocalTarget
			if t.Canary != nil && routes.toCanary(host, t.Weight) {
				stable := t
				stable.Canary = nil
				t, fallback = *t.Canary, &stable
			}
			start := time.Now()
			rec := &statusRecorder{ResponseWriter: c.Response().Writer, code: http.StatusOK}
			c.Response().Writer = rec
			served := h.proxyTo(rec, r, host, t, fallback, routes)
			end := time.Now()
			h.localStats.Record(served.InstanceID, end, end.Sub(start), rec.code)
			h.metrics.localRequests.WithLabelValues(host, served.Version, codeClass(rec.code)).Inc()
			h.metrics.localDuration.WithLabelValues(host, served.Version).Observe(end.Sub(start).Seconds())
			return nil
		}
	}
}

// proxyTo sends r to instance t of host and returns the instance that
// answered. A canary that cannot be reached (stopped by an undo another
// process saw first: routes are cached for localRouteTTL) hands a request
// without a body to the stable instance instead, and the route is read
// afresh next time.
func (h *Handler) proxyTo(w http.ResponseWriter, r *http.Request, host string, t store.LocalTarget, fallback *store.LocalTarget, routes *localRouteCache) store.LocalTarget {
	target := &url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(t.Port))}
	served := t
	p := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the app sees the name it was asked by
			pr.SetXForwarded()
		},
		Transport: localTransport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			h.logger.Warn("Local instance did not answer", "host", host, "instance_id", t.InstanceID, "error", err)
			if fallback != nil && (r.Body == nil || r.Body == http.NoBody) {
				routes.forget(host)
				served = h.proxyTo(w, r, host, *fallback, nil, routes)
				return
			}
			http.Error(w, fmt.Sprintf("the instance of %s did not answer", host), http.StatusBadGateway)
		},
	}
	p.ServeHTTP(w, r)
	return served
}

// statusRecorder remembers the status the proxy wrote, for the metrics.
type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.code = code
	s.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the connection (flushes).
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// codeClass is a status as its class (2xx …), the metric's code label: a
// bounded set whatever the apps answer.
func codeClass(code int) string {
	if code < 100 || code > 599 {
		return "5xx"
	}
	return strconv.Itoa(code/100) + "xx"
}

var localTransport = &http.Transport{
	DialContext:           (&net.Dialer{Timeout: 3 * time.Second}).DialContext,
	MaxIdleConnsPerHost:   16,
	IdleConnTimeout:       30 * time.Second,
	ResponseHeaderTimeout: 30 * time.Second,
}

func hostname(hostHeader string) string {
	h := strings.ToLower(hostHeader)
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	return strings.TrimSuffix(h, ".")
}

// localRouteCache remembers route lookups (found or not) for localRouteTTL,
// and where each canary route's split stands.
type localRouteCache struct {
	mu      sync.Mutex
	entries map[string]localRouteEntry
	splits  map[string]canarySplit // per host with a canary
}

type localRouteEntry struct {
	target  store.LocalTarget
	found   bool
	expires time.Time
}

func newLocalRouteCache() *localRouteCache {
	return &localRouteCache{entries: map[string]localRouteEntry{}, splits: map[string]canarySplit{}}
}

// toCanary reports whether the next request for host goes to its canary,
// which has weight % of the traffic. Each request goes there with
// probability weight/100 (contract §11), but not by a coin toss per
// request: the route's requests are spread evenly from a random phase, so
// any 100 in a row (of this process's) send weight of them, give or take
// one, to the canary. An analysis counts the canary's requests in a window,
// and coin tosses gave a 20 % canary 9 of 100 now and then, fewer than its
// min_requests: a healthy canary failed.
func (rc *localRouteCache) toCanary(host string, weight int) bool {
	switch {
	case weight <= 0:
		return false
	case weight >= 100:
		return true
	}
	rc.mu.Lock()
	if len(rc.splits) > 10000 { // as entries: start over rather than grow
		clear(rc.splits)
	}
	sp, ok := rc.splits[host]
	if !ok {
		sp.phase = rand.Float64()
	}
	n := sp.n
	sp.n++
	rc.splits[host] = sp
	rc.mu.Unlock()
	// Request n goes to the canary when the running share n·w/100, moved
	// by the phase, passes a whole number with it: w of every 100.
	w := float64(weight) / 100
	at := float64(n)*w + sp.phase
	return math.Floor(at+w) > math.Floor(at)
}

// canarySplit is where a canary route's split stands in this process.
type canarySplit struct {
	n     uint64  // requests split so far
	phase float64 // [0, 1), drawn once per route
}

// forget drops what the cache knows of host: the next request reads it.
func (rc *localRouteCache) forget(host string) {
	rc.mu.Lock()
	delete(rc.entries, host)
	rc.mu.Unlock()
}

func (rc *localRouteCache) get(ctx context.Context, st *store.Store, host string) (store.LocalTarget, bool, error) {
	now := time.Now()
	rc.mu.Lock()
	e, ok := rc.entries[host]
	rc.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.target, e.found, nil
	}
	t, err := st.LocalRouteTarget(ctx, host)
	found := err == nil
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return t, false, err
	}
	rc.mu.Lock()
	if len(rc.entries) > 10000 { // many made-up hosts: start over rather than grow
		clear(rc.entries)
	}
	rc.entries[host] = localRouteEntry{target: t, found: found, expires: now.Add(localRouteTTL)}
	rc.mu.Unlock()
	return t, found, nil
}
