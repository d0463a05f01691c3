package analysis

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/action/local"
)

// QueryTimeoutDefault bounds one Prometheus query.
const QueryTimeoutDefault = 10 * time.Second

// Config configures the action.
type Config struct {
	Store *store.Store // the routes (proxy provider)
	// Stats are the proxy's recorded requests (default local.DefaultProxyStats).
	Stats *local.ProxyStats
	// ProxyURL returns the base URL of this process's HTTP listener
	// (http://127.0.0.1:PORT), where synthetic load goes; "" while unknown.
	ProxyURL func() string
	// Client sends Prometheus queries and the synthetic load (default: one
	// with QueryTimeout).
	Client       *http.Client
	QueryTimeout time.Duration
}

// Action is the analysis action.
type Action struct{ cfg Config }

// New builds the action.
func New(cfg Config) *Action {
	cfg.Stats = cmp.Or(cfg.Stats, local.DefaultProxyStats)
	cfg.QueryTimeout = cmp.Or(cfg.QueryTimeout, QueryTimeoutDefault)
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.QueryTimeout}
	}
	return &Action{cfg: cfg}
}

// Measurement is one entry of the output document.
type Measurement struct {
	At     time.Time `json:"at"`
	Value  *float64  `json:"value"` // null when nothing could be measured
	OK     bool      `json:"ok"`
	Reason string    `json:"reason,omitempty"`
}

// Output is the step's output (contract §11).
type Output struct {
	Metric       string        `json:"metric"`
	Success      string        `json:"success"`
	Provider     string        `json:"provider"`
	Host         string        `json:"host,omitempty"`
	Interval     string        `json:"interval"`
	Count        int           `json:"count"`
	FailureLimit int           `json:"failure_limit"`
	Measurements []Measurement `json:"measurements"`
	Failed       int           `json:"failed"`
}

// Run takes the measurements. A re-run (a retry, a task resumed after a
// crash) measures afresh: only measurements taken now say how the canary
// does now.
func (a *Action) Run(ctx context.Context, in action.Input) (json.RawMessage, error) {
	if in.Compensating {
		in.Log("analysis has nothing to undo")
		return json.RawMessage(`{}`), nil
	}
	sp, ferr := ParseSpec(in.With)
	if ferr != nil {
		return nil, &action.Permanent{Err: ferr}
	}
	if sp.Provider == "proxy" && sp.Host == "" {
		app, _ := in.Params["app"].(string)
		env, _ := in.Params["env"].(string)
		if app == "" || env == "" {
			return nil, &action.Permanent{Err: errors.New("with.host is missing and the task has no app and env parameters")}
		}
		sp.Host = app + "." + env
	}
	out := Output{Metric: sp.Metric, Success: sp.Success.String(), Provider: sp.Provider, Host: sp.Host,
		Interval: sp.Interval.String(), Count: sp.Count, FailureLimit: sp.FailureLimit, Measurements: []Measurement{}}
	if sp.Provider == "proxy" && a.cfg.Store == nil {
		return nil, &action.Permanent{Err: errors.New("the proxy provider needs the local provider, which this server does not run")}
	}
	if sp.LoadRate > 0 {
		base := ""
		if a.cfg.ProxyURL != nil {
			base = a.cfg.ProxyURL()
		}
		if base == "" {
			return nil, &action.Permanent{Err: errors.New("with.load: this server has no proxy address to send load to")}
		}
		loadCtx, stopLoad := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { defer wg.Done(); a.load(loadCtx, base, sp) }()
		// The load stops with the step, however it ends (cancel included).
		defer func() { stopLoad(); wg.Wait() }()
		in.Log(fmt.Sprintf("Sending %d requests a second for %s to %s through flightdeck's proxy", sp.LoadRate, sp.LoadPath, sp.Host))
	}
	var values []string
	from := time.Now()
	timer := time.NewTimer(sp.Interval)
	defer timer.Stop()
	for i := 1; i <= sp.Count; i++ {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
		}
		to := time.Now()
		m := a.measure(ctx, sp, from, to)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		from = to
		timer.Reset(sp.Interval)
		if !m.OK {
			out.Failed++
		}
		out.Measurements = append(out.Measurements, m)
		val := "none"
		if m.Value != nil {
			val = formatValue(*m.Value)
		}
		values = append(values, val)
		verdict := "ok"
		if !m.OK {
			verdict = "failed"
		}
		line := fmt.Sprintf("measurement %d of %d: %s %s, wants %s: %s", i, sp.Count, sp.Metric, val, sp.Success, verdict)
		if m.Reason != "" {
			line += " (" + m.Reason + ")"
		}
		in.Log(line)
		if out.Failed > sp.FailureLimit {
			doc, _ := json.Marshal(out)
			_, _ = in.Output.Write(append(doc, '\n'))
			return doc, &action.Permanent{Err: fmt.Errorf("analysis failed: %s %s, wants %s; %d of %d measurements failed (failure_limit %d)",
				sp.Metric, strings.Join(values, ", "), sp.Success, out.Failed, i, sp.FailureLimit)}
		}
	}
	doc, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	_, _ = in.Output.Write(append(doc, '\n'))
	return doc, nil
}

func formatValue(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func (a *Action) measure(ctx context.Context, sp Spec, from, to time.Time) Measurement {
	var v float64
	var reason string
	if sp.Provider == "prometheus" {
		v, reason = a.queryPrometheus(ctx, sp)
	} else {
		v, reason = a.measureProxy(ctx, sp, from, to)
	}
	m := Measurement{At: to.UTC()}
	if reason != "" {
		m.Reason = reason
		return m
	}
	m.Value = &v
	m.OK = sp.Success.OK(v)
	return m
}

// measureProxy measures the route's canary (its current instance when it
// has none) over the requests that ended in (from, to].
func (a *Action) measureProxy(ctx context.Context, sp Spec, from, to time.Time) (float64, string) {
	r, err := a.cfg.Store.LocalRouteGet(ctx, sp.Host)
	if errors.Is(err, store.ErrNotFound) {
		return 0, "no route " + sp.Host
	}
	if err != nil {
		return 0, "reading the route: " + err.Error()
	}
	id := cmp.Or(r.CanaryID, r.InstanceID)
	if id == "" {
		return 0, "no instance serves " + sp.Host
	}
	w := a.cfg.Stats.Window(id, from, to)
	if w.Requests < sp.MinRequests || w.Requests == 0 && sp.Metric != "requests" {
		return float64(w.Requests), fmt.Sprintf("%d requests in the window, fewer than min_requests %d", w.Requests, sp.MinRequests)
	}
	switch sp.Metric {
	case "error_rate":
		return float64(w.Errors) / float64(w.Requests), ""
	case "latency_p95_ms":
		return float64(w.LatencyP95.Microseconds()) / 1000, ""
	}
	return float64(w.Requests), ""
}

// load sends sp.LoadRate requests a second to the route through the proxy
// at base until ctx ends. A request that fails counts where the proxy
// counts it; the load itself only keeps going.
func (a *Action) load(ctx context.Context, base string, sp Spec) {
	tick := time.NewTicker(time.Second / time.Duration(sp.LoadRate))
	defer tick.Stop()
	inflight := make(chan struct{}, 2*sp.LoadRate+4) // a slow canary must not pile up goroutines
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		select {
		case inflight <- struct{}{}:
		default:
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-inflight; wg.Done() }()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+sp.LoadPath, nil)
			if err != nil {
				return
			}
			req.Host = sp.Host + ".localhost"
			resp, err := a.cfg.Client.Do(req)
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}()
	}
}

// queryPrometheus runs sp.Query as an instant query; anything but one
// finite sample is a failed measurement with its reason.
func (a *Action) queryPrometheus(ctx context.Context, sp Spec) (float64, string) {
	qctx, cancel := context.WithTimeout(ctx, a.cfg.QueryTimeout)
	defer cancel()
	u := sp.URL + "/api/v1/query?" + url.Values{"query": {sp.Query}}.Encode()
	req, err := http.NewRequestWithContext(qctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, "query: " + err.Error()
	}
	resp, err := a.cfg.Client.Do(req)
	if err != nil {
		if qctx.Err() != nil && ctx.Err() == nil {
			return 0, fmt.Sprintf("prometheus did not answer within %s", a.cfg.QueryTimeout)
		}
		return 0, "prometheus: " + err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, "prometheus: reading the answer: " + err.Error()
	}
	var doc struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
		Data      struct {
			ResultType string          `json:"resultType"`
			Result     json.RawMessage `json:"result"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Status == "" {
		return 0, fmt.Sprintf("prometheus answered %d with something that is not its API's JSON", resp.StatusCode)
	}
	if doc.Status != "success" {
		return 0, fmt.Sprintf("prometheus: %s: %s", doc.ErrorType, truncate(doc.Error, 300))
	}
	var sample []any
	switch doc.Data.ResultType {
	case "scalar":
		if err := json.Unmarshal(doc.Data.Result, &sample); err != nil {
			return 0, "prometheus: a scalar that does not parse"
		}
	case "vector":
		var vec []struct {
			Value []any `json:"value"`
		}
		if err := json.Unmarshal(doc.Data.Result, &vec); err != nil {
			return 0, "prometheus: a vector that does not parse"
		}
		if len(vec) != 1 {
			return 0, fmt.Sprintf("the query returned %d samples; it must return one (aggregate it, e.g. sum(...))", len(vec))
		}
		sample = vec[0].Value
	default:
		return 0, fmt.Sprintf("the query returned a %s; it must return one sample", cmp.Or(doc.Data.ResultType, "nothing"))
	}
	if len(sample) != 2 {
		return 0, "prometheus: a sample that is not [time, value]"
	}
	s, _ := sample[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Sprintf("prometheus: the value %q is not a number", truncate(s, 40))
	}
	if v != v { // NaN: 0/0, a rate over no requests
		return 0, "the query's value is NaN (no data in its range?)"
	}
	return v, ""
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
