// Package analysis is the analysis action (contract §11): it takes count
// measurements, interval apart, of a canary (provider proxy: the requests
// flightdeck's own proxy sent to the route's canary) or of anything a
// Prometheus can answer (provider prometheus: an instant query), compares
// each with success, and fails the step as soon as more than failure_limit
// of them failed, so the saga undoes the traffic shifts before it.
package analysis

import (
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Defaults of an analysis step's inputs.
const (
	IntervalDefault    = 10 * time.Second
	CountDefault       = 3
	MinRequestsDefault = 10
)

// Bounds of an analysis step's inputs: a typo must not hold a task for days.
const (
	intervalMin = 10 * time.Millisecond
	intervalMax = time.Hour
	countMax    = 1000
	rateMax     = 1000
)

// Providers and the proxy provider's metrics.
var (
	providers    = []string{"proxy", "prometheus"}
	proxyMetrics = []string{"error_rate", "latency_p95_ms", "requests"}
	// Inputs lists every with field the action takes.
	Inputs = []string{"provider", "host", "metric", "min_requests", "load", "url", "query", "success", "interval", "count", "failure_limit"}
)

// Spec is an analysis step's inputs, checked.
type Spec struct {
	Provider     string
	Host         string // proxy; "" = from the task's params app and env
	Metric       string
	MinRequests  int
	LoadRate     int // proxy: synthetic requests a second, 0 for none
	LoadPath     string
	URL          string // prometheus
	Query        string
	Success      Threshold
	Interval     time.Duration
	Count        int
	FailureLimit int
}

// FieldError is an input that does not do; Field is its name under with
// (load.rate for a nested one).
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return "with." + e.Field + ": " + e.Message }

func bad(field, format string, args ...any) *FieldError {
	return &FieldError{Field: field, Message: fmt.Sprintf(format, args...)}
}

// templated reports a value the saga renders only at run time ({{ … }}):
// the loader leaves it for the run to check.
func templated(v any) bool {
	s, ok := v.(string)
	return ok && strings.Contains(s, "{{")
}

// Check validates with as the pipeline loader sees it: fields holding
// templates are skipped (checked when the step runs). It is the action's
// load-time check (contract §11: such a pipeline does not load).
func Check(with map[string]any) *FieldError {
	_, err := parse(with, true)
	return err
}

// ParseSpec reads a step's rendered inputs.
func ParseSpec(with map[string]any) (Spec, *FieldError) { return parse(with, false) }

func parse(with map[string]any, lenient bool) (Spec, *FieldError) {
	sp := Spec{Interval: IntervalDefault, Count: CountDefault, MinRequests: MinRequestsDefault}
	keys := make([]string, 0, len(with))
	for k := range with {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(Inputs, k) {
			return sp, bad(k, "analysis takes no %s (it takes %s)", k, strings.Join(Inputs, ", "))
		}
	}
	skip := func(k string) bool { v, ok := with[k]; return !ok || (lenient && templated(v)) }
	str := func(k string) (string, *FieldError) {
		s, ok := with[k].(string)
		if !ok {
			return "", bad(k, "want a string, got %v", with[k])
		}
		return strings.TrimSpace(s), nil
	}
	var err *FieldError
	if _, ok := with["provider"]; !ok {
		return sp, bad("provider", "is missing: proxy or prometheus")
	}
	if !skip("provider") {
		if sp.Provider, err = str("provider"); err != nil {
			return sp, err
		}
		if !slices.Contains(providers, sp.Provider) {
			return sp, bad("provider", "%q is not a provider (proxy or prometheus)", sp.Provider)
		}
	}
	if _, ok := with["success"]; !ok {
		return sp, bad("success", `is missing: a comparison such as "<= 0.05"`)
	}
	if !skip("success") {
		s, err := str("success")
		if err != nil {
			return sp, err
		}
		if sp.Success, err = ParseThreshold(s); err != nil {
			return sp, err
		}
	}
	if !skip("interval") {
		s, err := str("interval")
		if err != nil {
			return sp, err
		}
		d, perr := time.ParseDuration(s)
		if perr != nil || d < intervalMin || d > intervalMax {
			return sp, bad("interval", "%q is not a duration from %s to %s (10s, 1m)", s, intervalMin, intervalMax)
		}
		sp.Interval = d
	}
	if !skip("count") {
		if sp.Count, err = intIn(with, "count", 1, countMax); err != nil {
			return sp, err
		}
	}
	if !skip("failure_limit") {
		if sp.FailureLimit, err = intIn(with, "failure_limit", 0, countMax); err != nil {
			return sp, err
		}
	}
	if !skip("count") && !skip("failure_limit") && sp.FailureLimit >= sp.Count {
		return sp, bad("failure_limit", "%d allows every one of the %d measurements to fail: it must be below count", sp.FailureLimit, sp.Count)
	}
	switch sp.Provider {
	case "proxy":
		for _, k := range []string{"url", "query"} {
			if _, ok := with[k]; ok {
				return sp, bad(k, "is for the prometheus provider; the proxy provider measures the route's canary")
			}
		}
		if _, ok := with["metric"]; !ok {
			return sp, bad("metric", "is missing: the proxy provider measures error_rate, latency_p95_ms or requests")
		}
		if !skip("metric") {
			if sp.Metric, err = str("metric"); err != nil {
				return sp, err
			}
			if !slices.Contains(proxyMetrics, sp.Metric) {
				return sp, bad("metric", "%q is not a proxy metric (error_rate, latency_p95_ms or requests)", sp.Metric)
			}
		}
		if !skip("host") {
			if sp.Host, err = str("host"); err != nil {
				return sp, err
			}
			sp.Host = strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(sp.Host), "."), ".localhost")
			if sp.Host == "" {
				return sp, bad("host", "is empty: the route app.env whose canary is measured")
			}
		}
		if !skip("min_requests") {
			if sp.MinRequests, err = intIn(with, "min_requests", 0, 1_000_000); err != nil {
				return sp, err
			}
		}
		if v, ok := with["load"]; ok && !(lenient && templated(v)) {
			if err := sp.parseLoad(v, lenient); err != nil {
				return sp, err
			}
		}
	case "prometheus":
		for _, k := range []string{"host", "min_requests", "load"} {
			if _, ok := with[k]; ok {
				return sp, bad(k, "is for the proxy provider; the prometheus provider measures what query answers")
			}
		}
		for _, k := range []string{"url", "query"} {
			if _, ok := with[k]; !ok {
				return sp, bad(k, "is missing: the prometheus provider needs url (the server's base URL) and query")
			}
		}
		if !skip("url") {
			if sp.URL, err = str("url"); err != nil {
				return sp, err
			}
			u, perr := url.Parse(sp.URL)
			if perr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.User != nil {
				return sp, bad("url", "%q is not a base URL like http://127.0.0.1:9090", sp.URL)
			}
			sp.URL = strings.TrimSuffix(sp.URL, "/")
		}
		if !skip("query") {
			if sp.Query, err = str("query"); err != nil {
				return sp, err
			}
			if sp.Query == "" || len(sp.Query) > 4096 {
				return sp, bad("query", "must be a PromQL expression of 1 to 4096 characters")
			}
		}
		sp.Metric = "query"
		if !skip("metric") {
			if sp.Metric, err = str("metric"); err != nil {
				return sp, err
			}
		}
	}
	return sp, nil
}

func (sp *Spec) parseLoad(v any, lenient bool) *FieldError {
	m, ok := v.(map[string]any)
	if !ok {
		return bad("load", "want a mapping {rate, path}, got %v", v)
	}
	for k := range m {
		if k != "rate" && k != "path" {
			return bad("load."+k, "load takes rate and path")
		}
	}
	sp.LoadPath = "/"
	if p, ok := m["path"]; ok && !(lenient && templated(p)) {
		s, ok := p.(string)
		if !ok || !strings.HasPrefix(s, "/") || strings.HasPrefix(s, "//") || len(s) > 1024 {
			return bad("load.path", "want a path starting with /, got %v", p)
		}
		sp.LoadPath = s
	}
	r, ok := m["rate"]
	if !ok {
		return bad("load.rate", "is missing: requests a second, 1 to %d", rateMax)
	}
	if lenient && templated(r) {
		return nil
	}
	n, ok := whole(r)
	if !ok || n < 1 || n > rateMax {
		return bad("load.rate", "want requests a second from 1 to %d, got %v", rateMax, r)
	}
	sp.LoadRate = n
	return nil
}

func intIn(with map[string]any, k string, lo, hi int) (int, *FieldError) {
	n, ok := whole(with[k])
	if !ok || n < lo || n > hi {
		return 0, bad(k, "want a whole number from %d to %d, got %v", lo, hi, with[k])
	}
	return n, nil
}

// whole reads a whole number as YAML, JSON or a template gives it.
func whole(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), x == int64(int(x))
	case uint64:
		return int(x), x <= math.MaxInt32
	case float64:
		return int(x), x == math.Trunc(x) && math.Abs(x) <= math.MaxInt32
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		return n, err == nil
	}
	return 0, false
}

// Threshold is a success comparison: "<= 0.05".
type Threshold struct {
	Op    string
	Value float64
}

var ops = []string{"<=", ">=", "==", "!=", "<", ">"} // two-character ones first

// ParseThreshold reads "<op> <number>".
func ParseThreshold(s string) (Threshold, *FieldError) {
	s = strings.TrimSpace(s)
	for _, op := range ops {
		if rest, ok := strings.CutPrefix(s, op); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return Threshold{}, bad("success", "%q: after %s comes a number (%q is not one)", s, op, strings.TrimSpace(rest))
			}
			return Threshold{Op: op, Value: f}, nil
		}
	}
	return Threshold{}, bad("success", "%q: want a comparison, one of <, <=, >, >=, ==, != and a number (\"<= 0.05\")", s)
}

// OK compares a measured value with the threshold.
func (t Threshold) OK(v float64) bool {
	switch t.Op {
	case "<":
		return v < t.Value
	case "<=":
		return v <= t.Value
	case ">":
		return v > t.Value
	case ">=":
		return v >= t.Value
	case "==":
		return v == t.Value
	case "!=":
		return v != t.Value
	}
	return false
}

func (t Threshold) String() string { return t.Op + " " + strconv.FormatFloat(t.Value, 'g', -1, 64) }
