// Package tracing is flightdeck's OpenTelemetry wiring (contract §8): the
// OTLP exporter configured by the SDK's standard OTEL_* variables, and the
// spans flightdeck makes — HTTP requests, task runs (linked to the submit's
// trace), steps, compensations, agent model calls and tools, webhook
// deliveries — plus the W3C traceparent that goes out with them.
//
// With tracing not configured nothing is installed: every Start here
// returns its context unchanged and a no-op span after one atomic load,
// allocating nothing, so the task path pays nothing for it.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// scope names flightdeck's tracer (the instrumentation scope).
const scope = "flightdeck"

// on is set once a tracer provider is installed (Setup, Use); the hooks
// check it first, so tracing that is off costs one atomic load.
var on atomic.Bool

// noop is what the hooks return while tracing is off.
var noop = trace.SpanFromContext(context.Background())

// w3c reads and writes the traceparent header.
var w3c = propagation.TraceContext{}

// Configured reports whether the OTEL_* variables ask for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or OTEL_TRACES_EXPORTER is otlp, and
// neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none says no.
func Configured(getenv func(string) string) bool {
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return false
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return false
	case "otlp":
		return true
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// Setup installs the OTLP exporter when Configured says so, and returns
// the function that flushes and stops it (a no-op otherwise). The exporter
// speaks OTLP/HTTP with protobuf (http/protobuf, the specification's
// default; grpc is refused with a hint) and reads the standard
// OTEL_EXPORTER_OTLP_[TRACES_]{ENDPOINT,HEADERS,TIMEOUT,COMPRESSION,
// CERTIFICATE,CLIENT_CERTIFICATE,CLIENT_KEY,PROTOCOL}; the SDK reads the
// sampler (OTEL_TRACES_SAMPLER, OTEL_TRACES_SAMPLER_ARG), the batch
// processor (OTEL_BSP_*) and the resource (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES; the service name is flightdeck unless set).
func Setup(ctx context.Context, getenv func(string) string) (shutdown func(context.Context) error, err error) {
	if !Configured(getenv) {
		return func(context.Context) error { return nil }, nil
	}
	if exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp != "" && exp != "otlp" {
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER: flightdeck exports over otlp (or none), got %q", exp)
	}
	cfg, err := loadOTLPConfig(getenv)
	if err != nil {
		return nil, err
	}
	exporter := newOTLPExporter(cfg)
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", scope)),
		resource.WithTelemetrySDK(), resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	Use(tp)
	return tp.Shutdown, nil
}

// Use installs tp as the global tracer provider and turns the hooks on
// (Setup; tests with an in-memory exporter).
func Use(tp trace.TracerProvider) {
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(w3c)
	t := tp.Tracer(scope)
	cached.Store(&t)
	on.Store(true)
}

// Enabled reports whether spans are being made.
func Enabled() bool { return on.Load() }

// Redacted is err as a span may record it: its text through redact (secrets
// out), and only when spans are being made.
func Redacted(err error, redact func(string) string) error {
	if err == nil || !Enabled() {
		return err
	}
	return errors.New(redact(err.Error()))
}

// cached is flightdeck's tracer from the installed provider: looking it up
// by name at every span would take the provider's lock each time.
var cached atomic.Pointer[trace.Tracer]

func tracer() trace.Tracer { return *cached.Load() }

// StartServer starts the span of an HTTP request, a child of the caller's
// traceparent when it sent one. route is the matched route pattern (never
// the raw path, which may carry a login token).
func StartServer(ctx context.Context, h http.Header, method, route string) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop
	}
	ctx = w3c.Extract(ctx, propagation.HeaderCarrier(h))
	return tracer().Start(ctx, method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("http.request.method", method), attribute.String("http.route", route)))
}

// EndServer ends an HTTP request's span with its status (5xx is an error).
func EndServer(span trace.Span, status int) {
	if !span.IsRecording() {
		span.End()
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

// StartRun starts the span of one run of a task (claim to finish): a new
// trace, linked to the submit's (traceparent, as stored with the task; ""
// for none), since a run may happen long after the submit and a task may
// run several times (after an approval, a crash or a retry).
func StartRun(ctx context.Context, taskID, kind, pipeline, traceparent string, attempt int) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("flightdeck.task.id", taskID), attribute.String("flightdeck.task.kind", kind),
			attribute.String("flightdeck.task.pipeline", pipeline), attribute.Int("flightdeck.task.attempt", attempt))}
	opts = linkSubmit(opts, traceparent)
	return tracer().Start(ctx, "task.run "+kind, opts...)
}

// linkSubmit adds a link to the submit's span (traceparent, as stored
// with the task) when there is one.
func linkSubmit(opts []trace.SpanStartOption, traceparent string) []trace.SpanStartOption {
	if sc := Parse(traceparent); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc,
			Attributes: []attribute.KeyValue{attribute.String("flightdeck.link", "submit")}}))
	}
	return opts
}

// EndRun ends a run's span with the state its outcome wrote: "" when
// none was (a lost lease, a write that failed), which is an error like a
// failed task or one that needs attention; errMsg is the task's error.
func EndRun(span trace.Span, state, errMsg string) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if state == "" {
		state = "not_written"
		errMsg = "the run's outcome was not written (lease lost or the write failed)"
	}
	span.SetAttributes(attribute.String("flightdeck.task.state", state))
	if errMsg != "" {
		span.SetAttributes(attribute.String("flightdeck.task.error", errMsg))
	}
	switch state {
	case "failed", "needs_attention", "not_written":
		span.SetStatus(codes.Error, errMsg)
	}
	span.End()
}

// StartStep starts the span of one attempt of a step's action, or of its
// compensation (End it with the action's error).
func StartStep(ctx context.Context, taskID, pipeline, step, action string, index, attempt int, compensating bool) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop
	}
	name := "step " + step
	if compensating {
		name = "compensate " + step
	}
	return tracer().Start(ctx, name, trace.WithAttributes(attribute.String("flightdeck.task.id", taskID),
		attribute.String("flightdeck.task.pipeline", pipeline), attribute.String("flightdeck.step.name", step), attribute.String("flightdeck.step.action", action),
		attribute.Int("flightdeck.step.index", index), attribute.Int("flightdeck.step.attempt", attempt),
		attribute.Bool("flightdeck.step.compensating", compensating)))
}

// StartModelCall starts the span of an agent's call to the model (its
// retries included).
func StartModelCall(ctx context.Context, taskID string, iteration int) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop
	}
	return tracer().Start(ctx, "agent.model_call", trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("flightdeck.task.id", taskID), attribute.Int("flightdeck.agent.iteration", iteration)))
}

// StartTool starts the span of an agent's tool call.
func StartTool(ctx context.Context, taskID, tool, callID string) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop
	}
	return tracer().Start(ctx, "agent.tool "+tool, trace.WithAttributes(attribute.String("flightdeck.task.id", taskID),
		attribute.String("flightdeck.agent.tool", tool), attribute.String("flightdeck.agent.call_id", callID)))
}

// StartWebhook starts the span of one webhook delivery attempt: a trace
// of its own (deliveries leave from the outbox, not from a run), linked to
// the task's submit (traceparent, "" for none).
func StartWebhook(ctx context.Context, deliveryID, taskID, traceparent string, attempt int) (context.Context, trace.Span) {
	if !on.Load() {
		return ctx, noop
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.String("flightdeck.webhook.delivery_id", deliveryID),
			attribute.String("flightdeck.task.id", taskID), attribute.Int("flightdeck.webhook.attempt", attempt))}
	opts = linkSubmit(opts, traceparent)
	return tracer().Start(ctx, "webhook.deliver", opts...)
}

// EndDelivery ends a webhook delivery's span with the receiver's answer:
// no answer (err) or anything but a 2xx is an error.
func EndDelivery(span trace.Span, status int, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", status))
	}
	if err == nil && (status < 200 || status >= 300) {
		err = fmt.Errorf("answered %d", status)
	}
	End(span, err)
}

// End ends a span with its outcome: ok, or error with err recorded and the
// span's status set.
func End(span trace.Span, err error) {
	if !span.IsRecording() {
		span.End()
		return
	}
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(attribute.String("flightdeck.outcome", "error"))
	} else {
		span.SetAttributes(attribute.String("flightdeck.outcome", "ok"))
	}
	span.End()
}

// Traceparent is the W3C traceparent of ctx's span ("" when there is
// none): stored with a submitted task, handed to exec steps as TRACEPARENT.
func Traceparent(ctx context.Context) string {
	if !on.Load() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-" + sc.TraceFlags().String()
}

// Inject sets the traceparent header of an outgoing request (http actions,
// webhook deliveries) from ctx's span; nothing without one.
func Inject(ctx context.Context, h http.Header) {
	if !on.Load() {
		return
	}
	w3c.Inject(ctx, propagation.HeaderCarrier(h))
}

// Parse reads a traceparent value; invalid or empty gives an invalid
// SpanContext.
func Parse(traceparent string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	ctx := w3c.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceparent})
	return trace.SpanContextFromContext(ctx)
}
