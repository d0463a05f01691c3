package tracing

import (
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// collector is a fake OTLP/HTTP receiver on 127.0.0.1: it answers each
// request with the next of answers (then 200) and keeps what it got.
type collector struct {
	srv *httptest.Server

	mu       sync.Mutex
	answers  []func(http.ResponseWriter)
	requests []*http.Request
	bodies   [][]byte // decompressed
}

func newCollector(t *testing.T, answers ...func(http.ResponseWriter)) *collector {
	c := &collector{answers: answers}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			z, err := gzip.NewReader(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = z
		}
		b, _ := io.ReadAll(body)
		c.mu.Lock()
		c.requests = append(c.requests, r)
		c.bodies = append(c.bodies, b)
		var answer func(http.ResponseWriter)
		if len(c.answers) > 0 {
			answer, c.answers = c.answers[0], c.answers[1:]
		}
		c.mu.Unlock()
		if answer != nil {
			answer(w)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *collector) got() ([]*http.Request, [][]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.bodies
}

func status(code int, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = w.Write([]byte("\x0a\x0bbad request")) // a google.rpc.Status-like body
	}
}

func testSpans() []sdktrace.ReadOnlySpan {
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}, TraceFlags: trace.FlagsSampled})
	return tracetest.SpanStubs{{Name: "a", SpanContext: sc, Resource: resource.Empty()}, {Name: "b", SpanContext: sc, Resource: resource.Empty()}}.Snapshots()
}

func exporterFor(t *testing.T, env map[string]string) *otlpExporter {
	t.Helper()
	cfg, err := loadOTLPConfig(func(k string) string { return env[k] })
	require.NoError(t, err)
	e := newOTLPExporter(cfg)
	e.retryBase, e.retryCeiling = time.Millisecond, 10*time.Millisecond
	return e
}

func TestExporterPostsProtobuf(t *testing.T) {
	t.Parallel()
	c := newCollector(t)
	e := exporterFor(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        c.srv.URL + "/base/",
		"OTEL_EXPORTER_OTLP_HEADERS":         "authorization=Bearer%20abc%2B%2F,x-team = a%2Cb ,x-both=general",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":  "x-both=traces",
		"OTEL_EXPORTER_OTLP_COMPRESSION":     "gzip",
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
	})
	require.NoError(t, e.ExportSpans(t.Context(), testSpans()))

	reqs, bodies := c.got()
	require.Len(t, reqs, 1)
	r := reqs[0]
	require.Equal(t, http.MethodPost, r.Method)
	require.Equal(t, "/base/v1/traces", r.URL.Path, "the general endpoint is a base; the signal's path is added")
	require.Equal(t, "application/x-protobuf", r.Header.Get("Content-Type"))
	require.Equal(t, "gzip", r.Header.Get("Content-Encoding"))
	require.Equal(t, "Bearer abc+/", r.Header.Get("Authorization"), "URL-decoded")
	require.Equal(t, "a,b", r.Header.Get("X-Team"))
	require.Equal(t, "traces", r.Header.Get("X-Both"), "the TRACES_ variable wins per key")
	got := decodeRequest(t, bodies[0])
	var names []string
	for _, s := range got.ResourceSpans[0].ScopeSpans[0].Spans {
		names = append(names, s.Name)
	}
	require.Equal(t, []string{"a", "b"}, names)

	require.NoError(t, e.Shutdown(t.Context()))
	require.ErrorIs(t, e.ExportSpans(t.Context(), testSpans()), errStopped)
}

func TestExporterReportsPartialSuccess(t *testing.T) {
	t.Parallel()
	// ExportTraceServiceResponse{partial_success: {rejected_spans: 1,
	// error_message: "span too big"}}, written with protowire rather than
	// our own writer, after an unknown field a newer collector might add.
	var ps []byte
	ps = protowire.AppendTag(ps, 1, protowire.VarintType)
	ps = protowire.AppendVarint(ps, 1)
	ps = protowire.AppendTag(ps, 2, protowire.BytesType)
	ps = protowire.AppendString(ps, "span too big")
	var body []byte
	body = protowire.AppendTag(body, 9, protowire.Fixed32Type)
	body = protowire.AppendFixed32(body, 7)
	body = protowire.AppendTag(body, 1, protowire.BytesType)
	body = protowire.AppendBytes(body, ps)
	c := newCollector(t, func(w http.ResponseWriter) { _, _ = w.Write(body) }, func(w http.ResponseWriter) { _, _ = w.Write([]byte{0x0a, 0x00}) })
	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL})
	require.EqualError(t, e.ExportSpans(t.Context(), testSpans()), "the OTLP collector rejected 1 spans: span too big")
	require.NoError(t, e.ExportSpans(t.Context(), testSpans()), "an empty partial_success is a success")
	reqs, _ := c.got()
	require.Len(t, reqs, 2, "not retried")
}

func TestExporterTracesEndpointIsUsedAsGiven(t *testing.T) {
	t.Parallel()
	c := newCollector(t)
	e := exporterFor(t, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT":        "http://127.0.0.1:1/not-this",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": c.srv.URL + "/custom/path",
	})
	require.NoError(t, e.ExportSpans(t.Context(), testSpans()))
	reqs, bodies := c.got()
	require.Equal(t, "/custom/path", reqs[0].URL.Path)
	require.Empty(t, reqs[0].Header.Get("Content-Encoding"), "no compression unless asked")
	_ = decodeRequest(t, bodies[0])
}

func TestExporterRetries(t *testing.T) {
	t.Parallel()
	t.Run("RetryableAnswersUntilAccepted", func(t *testing.T) {
		t.Parallel()
		c := newCollector(t, status(503, "Retry-After", "0"), status(429), status(502), status(504))
		e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL})
		require.NoError(t, e.ExportSpans(t.Context(), testSpans()))
		reqs, bodies := c.got()
		require.Len(t, reqs, 5)
		require.Equal(t, bodies[0], bodies[4], "the same request each time")
	})
	t.Run("RefusalIsNotRetried", func(t *testing.T) {
		t.Parallel()
		c := newCollector(t, status(400))
		e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL})
		err := e.ExportSpans(t.Context(), testSpans())
		require.ErrorContains(t, err, "400 Bad Request: bad request")
		reqs, _ := c.got()
		require.Len(t, reqs, 1)
	})
	t.Run("RetryAfterPastTheTimeoutGivesUp", func(t *testing.T) {
		t.Parallel()
		c := newCollector(t, status(503, "Retry-After", "3600"))
		e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "30000"})
		began := time.Now()
		err := e.ExportSpans(t.Context(), testSpans())
		require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_TIMEOUT")
		// Well under the 30 s timeout (a loaded machine's slack), which a
		// wait would reach.
		require.Less(t, time.Since(began), 10*time.Second, "not waited for")
		reqs, _ := c.got()
		require.Len(t, reqs, 1)
	})
	t.Run("RetryAfterIsHonoured", func(t *testing.T) {
		t.Parallel()
		c := newCollector(t, status(429, "Retry-After", "1"))
		e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL})
		began := time.Now()
		require.NoError(t, e.ExportSpans(t.Context(), testSpans()))
		require.GreaterOrEqual(t, time.Since(began), time.Second)
		reqs, _ := c.got()
		require.Len(t, reqs, 2)
	})
	t.Run("TimeoutBoundsTheRetries", func(t *testing.T) {
		t.Parallel()
		down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(503) }))
		t.Cleanup(down.Close)
		e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": down.URL, "OTEL_EXPORTER_OTLP_TIMEOUT": "300"})
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		began := time.Now()
		require.Error(t, e.ExportSpans(ctx, testSpans()))
		// The 300 ms timeout, not the context's 10 s, ends the retries
		// (with room for a loaded machine).
		require.Less(t, time.Since(began), 5*time.Second)
	})
	t.Run("NoCollectorIsRetriedThenReported", func(t *testing.T) {
		t.Parallel()
		gone := httptest.NewServer(http.NotFoundHandler())
		url := gone.URL
		gone.Close()
		e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_TIMEOUT": "200"})
		require.ErrorContains(t, e.ExportSpans(t.Context(), testSpans()), "error sending spans")
	})
}

func TestOTLPConfigErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate"), 0o600))
	for _, tc := range []struct {
		env  map[string]string
		want []string // substrings of the error
	}{
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "OTLP/HTTP", "4318"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "4318"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, []string{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", `"http/json"`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"}, []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://", `got "localhost:4318"`}},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "ftp://collector"}, []string{"OTEL_EXPORTER_OTLP_ENDPOINT"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://%zz"}, []string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "novalue"}, []string{"OTEL_EXPORTER_OTLP_HEADERS", "novalue"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "a=%zz"}, []string{"OTEL_EXPORTER_OTLP_TRACES_HEADERS"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "bad key=v"}, []string{"OTEL_EXPORTER_OTLP_HEADERS"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_HEADERS": "k=a%0Ab"}, []string{"OTEL_EXPORTER_OTLP_HEADERS"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, []string{"OTEL_EXPORTER_OTLP_TIMEOUT", "milliseconds"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT": "-1"}, []string{"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, []string{"OTEL_EXPORTER_OTLP_COMPRESSION", "gzip"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_CERTIFICATE": filepath.Join(dir, "missing.pem")}, []string{"OTEL_EXPORTER_OTLP_CERTIFICATE"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE": notPEM}, []string{"OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE", "no PEM"}},
		{map[string]string{"OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE": notPEM}, []string{"OTEL_EXPORTER_OTLP_CLIENT_KEY", "both"}},
	} {
		_, err := loadOTLPConfig(func(k string) string { return tc.env[k] })
		require.Error(t, err, "%v", tc.env)
		for _, w := range tc.want {
			require.ErrorContains(t, err, w, "%v", tc.env)
		}
	}

	cfg, err := loadOTLPConfig(func(string) string { return "" })
	require.NoError(t, err)
	require.Equal(t, "http://localhost:4318/v1/traces", cfg.url, "the specification's default")
	require.Equal(t, 10*time.Second, cfg.timeout)
	require.False(t, cfg.gzip)
	require.Nil(t, cfg.tls.RootCAs, "the system roots")
}

// TestExporterOverHTTPS exports to a TLS collector trusted through
// OTEL_EXPORTER_OTLP_CERTIFICATE, which the system roots do not trust.
func TestExporterOverHTTPS(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
	srv.StartTLS()
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, certPEM(srv), 0o600))

	e := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_CERTIFICATE": ca})
	require.NoError(t, e.ExportSpans(t.Context(), testSpans()))
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 1)
	require.Len(t, decodeRequest(t, bodies[0]).ResourceSpans[0].ScopeSpans[0].Spans, 2)

	untrusted := exporterFor(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	require.ErrorContains(t, untrusted.ExportSpans(t.Context(), testSpans()), "certificate", "the system roots do not know the test CA")
}

func certPEM(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
