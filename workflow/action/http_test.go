package action

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/breaker"
)

func TestHTTPRetriesAndKey(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}))
	defer srv.Close()
	in, sink, out := input(t, map[string]any{"url": srv.URL, "method": "post", "body": map[string]any{"a": 1}})
	res, err := HTTP{RetryBase: time.Millisecond}.Run(t.Context(), in)
	require.NoError(t, err)
	var got struct{ Status int }
	require.NoError(t, json.Unmarshal(res, &got))
	require.Equal(t, 200, got.Status)
	require.Equal(t, []string{"key-1", "key-1"}, keys, "the same key on every try")
	require.Equal(t, "ok\n", out.String())
	require.Contains(t, sink.lines, "ok")
}

func TestHTTPNoRetryOn4xxAndNoRedirects(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
	}))
	defer srv.Close()
	in, _, _ := input(t, map[string]any{"url": srv.URL + "/bad"})
	_, err := HTTP{RetryBase: time.Millisecond}.Run(t.Context(), in)
	var perm *Permanent
	require.True(t, errors.As(err, &perm))
	require.EqualValues(t, 1, calls.Load())

	in, _, _ = input(t, map[string]any{"url": srv.URL + "/redirect"})
	_, err = HTTP{RetryBase: time.Millisecond}.Run(t.Context(), in)
	require.Error(t, err)
	require.EqualValues(t, 2, calls.Load(), "the redirect target is never fetched")

	in, _, _ = input(t, map[string]any{"url": srv.URL + "/redirect", "expect_status": []any{302}})
	_, err = HTTP{}.Run(t.Context(), in)
	require.NoError(t, err)
}

func TestBreakersPerHost(t *testing.T) {
	t.Parallel()
	now := time.Unix(0, 0)
	b := NewBreakers(breaker.Config{Now: func() time.Time { return now }})
	for range 5 {
		call, err := b.Allow("h")
		require.NoError(t, err)
		call.Done(false)
	}
	_, err := b.Allow("h")
	var open *CircuitOpenError
	require.ErrorAs(t, err, &open)
	require.ErrorIs(t, err, ErrCircuitOpen)
	require.Equal(t, "h", open.Host)
	require.Equal(t, now.Add(30*time.Second), open.Until, "the contract's 30 s")
	require.True(t, strings.HasPrefix(err.Error(), "circuit_open: "), err.Error())
	_, err = b.Allow("other")
	require.NoError(t, err, "per host")
	now = now.Add(30 * time.Second)
	probe, err := b.Allow("h")
	require.NoError(t, err, "half-open: one probe")
	_, err = b.Allow("h")
	require.ErrorIs(t, err, ErrCircuitOpen, "only one probe at a time")
	probe.Done(true)
}

func TestHTTPBreakerFailsFast(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	br := NewBreakers(breaker.Config{})
	h := HTTP{Breakers: br, Retries: 4, RetryBase: time.Millisecond}
	in, _, _ := input(t, map[string]any{"url": srv.URL})
	_, err := h.Run(t.Context(), in)
	require.ErrorContains(t, err, "answered 503")
	require.EqualValues(t, 5, calls.Load())
	_, err = h.Run(t.Context(), in)
	require.ErrorIs(t, err, ErrCircuitOpen)
	require.EqualValues(t, 5, calls.Load(), "no call while open")
}
