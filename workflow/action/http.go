package action

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"flightdeck/internal/backoff"
	"flightdeck/internal/breaker"
	"flightdeck/internal/tracing"
	"flightdeck/internal/words"
)

// HTTPInputs are the with fields the action takes (the loader refuses others).
var HTTPInputs = []string{"method", "url", "headers", "body", "expect_status"}

// HTTP sends a request with the step's idempotency key, retrying 5xx, 429
// and network errors with backoff, behind a circuit breaker per host.
// Redirects are not followed.
type HTTP struct {
	Client    *http.Client
	Breakers  *Breakers
	Retries   int           // default 2
	RetryBase time.Duration // default 200ms
}

const maxHTTPBody = 64 << 20

// Run implements Action.
func (h HTTP) Run(ctx context.Context, in Input) (json.RawMessage, error) {
	method := "GET"
	if m, ok := in.With["method"].(string); ok && m != "" {
		method = strings.ToUpper(m)
	}
	rawURL, _ := in.With["url"].(string)
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &Permanent{Err: errors.New("http: with.url must be an http(s) URL")}
	}
	headers, err := stringMap(in.With["headers"])
	if err != nil {
		return nil, &Permanent{Err: fmt.Errorf("http: with.headers: %w", err)}
	}
	var body []byte
	switch b := in.With["body"].(type) {
	case nil:
	case string:
		body = []byte(b)
	default:
		if body, err = json.Marshal(b); err != nil {
			return nil, &Permanent{Err: fmt.Errorf("http: with.body: %w", err)}
		}
	}
	expect, err := expectedStatus(in.With["expect_status"])
	if err != nil {
		return nil, &Permanent{Err: err}
	}
	client := h.Client
	if client == nil {
		client = &http.Client{}
	}
	noRedirect := *client
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	retries := h.Retries
	if retries == 0 {
		retries = 2
	}
	base := h.RetryBase
	if base == 0 {
		base = 200 * time.Millisecond
	}
	start := time.Now()
	var lastErr error
	for try := 0; try <= retries; try++ {
		if try > 0 {
			wait := backoff.Exponential(base, 0, try)
			in.Log(fmt.Sprintf("retrying in %s: %v", words.Duration(wait), lastErr))
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(wait):
			}
		}
		var call breaker.Call
		if h.Breakers != nil {
			if call, err = h.Breakers.Allow(u.Host); err != nil {
				in.Log(err.Error())
				return nil, err
			}
		}
		status, retryable, err := h.once(ctx, &noRedirect, method, u.String(), headers, body, in, expect)
		switch {
		case h.Breakers == nil:
		case ctx.Err() != nil:
			call.Abandon() // our step was stopped: says nothing about the host
		default:
			call.Done(err == nil || !retryable)
		}
		if err == nil {
			out, _ := json.Marshal(map[string]any{"status": status, "duration_ms": time.Since(start).Milliseconds()})
			return out, nil
		}
		lastErr = err
		if !retryable || ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, lastErr
}

func (h HTTP) once(ctx context.Context, c *http.Client, method, target string, headers map[string]string, body []byte, in Input, expect func(int) bool) (int, bool, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return 0, false, &Permanent{Err: err}
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Idempotency-Key", in.IdempotencyKey)
	tracing.Inject(ctx, req.Header) // the step span's traceparent (contract §8)
	res, err := c.Do(req)
	if err != nil {
		return 0, true, fmt.Errorf("http: %w", err)
	}
	defer res.Body.Close()
	// The whole body goes to the artifact; its first lines to the log.
	br := bufio.NewReader(io.TeeReader(io.LimitReader(res.Body, maxHTTPBody), in.Output))
	for i := 0; i < 20; i++ {
		line, err := br.ReadString('\n')
		if line != "" {
			in.Log(strings.TrimRight(line, "\r\n"))
		}
		if err != nil {
			break
		}
	}
	_, _ = io.Copy(io.Discard, br)
	switch {
	case expect(res.StatusCode):
		return res.StatusCode, false, nil
	case res.StatusCode >= 500 || res.StatusCode == http.StatusTooManyRequests:
		return res.StatusCode, true, fmt.Errorf("http: %s answered %d", req.URL.Host, res.StatusCode)
	}
	return res.StatusCode, false, &Permanent{Err: fmt.Errorf("http: %s answered %d", req.URL.Host, res.StatusCode)}
}

func expectedStatus(v any) (func(int) bool, error) {
	switch x := v.(type) {
	case nil:
		return func(s int) bool { return s >= 200 && s < 300 }, nil
	case int:
		return func(s int) bool { return s == x }, nil
	case int64:
		return func(s int) bool { return s == int(x) }, nil
	case float64:
		return func(s int) bool { return s == int(x) }, nil
	case string:
		var n int
		if _, err := fmt.Sscanf(x, "%d", &n); err != nil {
			return nil, errors.New("http: with.expect_status must be a status code or a list of them")
		}
		return func(s int) bool { return s == n }, nil
	case []any:
		set := map[int]bool{}
		for _, it := range x {
			f, err := expectedStatus(it)
			if err != nil {
				return nil, err
			}
			for s := 100; s < 600; s++ {
				if f(s) {
					set[s] = true
				}
			}
		}
		return func(s int) bool { return set[s] }, nil
	}
	return nil, errors.New("http: with.expect_status must be a status code or a list of them")
}
