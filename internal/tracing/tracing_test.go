package tracing

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
)

func TestConfigured(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, false},
		{map[string]string{"OTEL_SERVICE_NAME": "x"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_TRACES_EXPORTER": "none"}, false},
		{map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_SDK_DISABLED": "true"}, false},
	} {
		require.Equal(t, tc.want, Configured(func(k string) string { return tc.env[k] }), "%v", tc.env)
	}
}

func TestSetupRefusesUnknownSettings(t *testing.T) {
	t.Parallel()
	_, err := Setup(t.Context(), func(k string) string {
		return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon"}[k]
	})
	require.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL")
}

// TestOffCostsNothing runs first and alone (not parallel): before any
// provider is installed, the hooks allocate nothing and add no header.
func TestOffCostsNothing(t *testing.T) {
	require.False(t, Enabled())
	ctx := context.Background()
	h := http.Header{}
	fail := errors.New("failed")
	allocs := testing.AllocsPerRun(100, func() { everyHook(ctx, h, fail) })
	require.Zero(t, allocs)
	require.Empty(t, h)
	if !testing.Short() {
		// The same through the benchmark harness, which counts better.
		res := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				everyHook(ctx, h, fail)
			}
		})
		require.Zero(t, res.AllocsPerOp(), res.String())
	}
}

// everyHook calls each hook the task path calls, as a run with one step,
// a compensation, a model call, a tool and a webhook delivery does.
func everyHook(ctx context.Context, h http.Header, fail error) {
	rctx, run := StartRun(ctx, "task", "deploy", "noop", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", 1)
	sctx, step := StartStep(rctx, "task", "noop", "build", "exec", 1, 1, false)
	Inject(sctx, h)
	if Traceparent(sctx) != "" {
		panic("a traceparent while off")
	}
	End(step, nil)
	_, comp := StartStep(rctx, "task", "noop", "build", "exec", 1, 1, true)
	End(comp, fail)
	mctx, model := StartModelCall(rctx, "task", 1)
	End(model, nil)
	_, tool := StartTool(mctx, "task", "list_pipelines", "call_1")
	End(tool, fail)
	EndRun(run, "failed", "step build failed")
	wctx, hook := StartWebhook(ctx, "delivery", "task", "", 1)
	Inject(wctx, h)
	EndDelivery(hook, 500, nil)
	_, srv := StartServer(ctx, h, "POST", "/api/v1/tasks")
	EndServer(srv, 202)
}

func TestSpansAndTraceparent(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	ctx := context.Background()

	// A submit's request span, its traceparent stored; a run later links to it.
	hdr := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}
	sctx, srv := StartServer(ctx, hdr, "POST", "/api/v1/tasks")
	submit := Traceparent(sctx)
	EndServer(srv, 202)
	require.Regexp(t, `^00-0af7651916cd43dd8448eb211c80319c-[0-9a-f]{16}-01$`, submit, "a child of the caller's trace")

	rctx, run := StartRun(ctx, "t1", "deploy", "web", submit, 1)
	stctx, step := StartStep(rctx, "t1", "web", "build", "exec", 1, 1, false)
	out := http.Header{}
	Inject(stctx, out)
	End(step, errors.New("exit status 1"))
	EndRun(run, "failed", "step build failed")

	spans := exp.GetSpans()
	require.Len(t, spans, 3)
	byName := map[string]tracetest.SpanStub{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	r, s := byName["task.run deploy"], byName["step build"]
	require.NotEqual(t, "0af7651916cd43dd8448eb211c80319c", r.SpanContext.TraceID().String(), "a run is a trace of its own")
	require.Len(t, r.Links, 1)
	require.Equal(t, Parse(submit).SpanID(), r.Links[0].SpanContext.SpanID(), "linked to the submit")
	require.Equal(t, r.SpanContext.SpanID(), s.Parent.SpanID())
	require.Equal(t, "00-"+s.SpanContext.TraceID().String()+"-"+s.SpanContext.SpanID().String()+"-01", out.Get("traceparent"))
	require.Equal(t, "Error", s.Status.Code.String())
	require.False(t, Parse("garbage").IsValid())
	require.Equal(t, trace.SpanKindServer, byName["POST /api/v1/tasks"].SpanKind)
}

// TestSetupExportsToACollector runs last and alone (it installs the
// global provider): Setup with the standard variables sends the hooks'
// spans to a fake OTLP/HTTP collector, with flightdeck's resource and
// scope, when the provider shuts down.
func TestSetupExportsToACollector(t *testing.T) {
	c := newCollector(t)
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": c.srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=secret"}
	shutdown, err := Setup(t.Context(), func(k string) string { return env[k] })
	require.NoError(t, err)
	require.True(t, Enabled())

	rctx, run := StartRun(context.Background(), "t1", "deploy", "web", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", 2)
	_, step := StartStep(rctx, "t1", "web", "build", "exec", 1, 1, false)
	End(step, errors.New("exit status 1"))
	EndRun(run, "failed", "step build failed")
	require.NoError(t, shutdown(t.Context()))

	reqs, bodies := c.got()
	require.NotEmpty(t, reqs)
	require.Equal(t, "secret", reqs[0].Header.Get("X-Api-Key"))
	spans := map[string]*tracepb.Span{}
	var res *tracepb.ResourceSpans
	for _, b := range bodies {
		for _, rs := range decodeRequest(t, b).ResourceSpans {
			res = rs
			for _, ss := range rs.ScopeSpans {
				require.Equal(t, "flightdeck", ss.Scope.Name)
				for _, s := range ss.Spans {
					spans[s.Name] = s
				}
			}
		}
	}
	resAttrs := map[string]string{}
	for _, kv := range res.Resource.Attributes {
		resAttrs[kv.Key] = kv.Value.GetStringValue()
	}
	require.Equal(t, "flightdeck", resAttrs["service.name"])
	require.Equal(t, "go", resAttrs["telemetry.sdk.language"])

	r, s := spans["task.run deploy"], spans["step build"]
	require.NotNil(t, r)
	require.NotNil(t, s)
	require.Equal(t, r.SpanId, s.ParentSpanId)
	require.Equal(t, r.TraceId, s.TraceId)
	require.Len(t, r.Links, 1)
	require.Equal(t, Parse("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01").SpanID().String(), hex.EncodeToString(r.Links[0].SpanId))
	require.Equal(t, tracepb.Status_STATUS_CODE_ERROR, s.Status.Code)
	require.Equal(t, "exit status 1", s.Status.Message)
	require.Equal(t, "exception", s.Events[0].Name, "the recorded error")
	require.Equal(t, tracepb.Span_SPAN_KIND_CONSUMER, r.Kind)
}
