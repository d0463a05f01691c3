package tracing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
)

// decodeRequest decodes an ExportTraceServiceRequest with the official
// generated types. TracesData has the request's one field (repeated
// ResourceSpans resource_spans = 1) under the same number, and unlike the
// collector package it does not pull grpc into the test build.
func decodeRequest(t *testing.T, b []byte) *tracepb.TracesData {
	t.Helper()
	var got tracepb.TracesData
	require.NoError(t, proto.Unmarshal(b, &got))
	require.Empty(t, got.ProtoReflect().GetUnknown(), "every field known to the official types")
	return &got
}

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}

func TestEncodeTracesDecodesWithTheOfficialTypes(t *testing.T) {
	t.Parallel()
	tid := trace.TraceID{0x0a, 0xf7, 0x65, 0x19, 0x16, 0xcd, 0x43, 0xdd, 0x84, 0x48, 0xeb, 0x21, 0x1c, 0x80, 0x31, 0x9c}
	tidB := trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	ts, err := trace.ParseTraceState("vendor=value,other=x")
	require.NoError(t, err)
	span := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{1, 1, 1, 1, 1, 1, 1, 1}, TraceFlags: trace.FlagsSampled, TraceState: ts})
	parent := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{2, 2, 2, 2, 2, 2, 2, 2}, TraceFlags: trace.FlagsSampled, Remote: true})
	linked := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tidB, SpanID: trace.SpanID{3, 3, 3, 3, 3, 3, 3, 3}, Remote: true})
	root := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tidB, SpanID: trace.SpanID{4, 4, 4, 4, 4, 4, 4, 4}, TraceFlags: trace.FlagsSampled})
	start := time.Unix(1_700_000_000, 123_456_789)
	res := resource.NewWithAttributes("https://opentelemetry.io/schemas/1.26.0", attribute.String("service.name", "flightdeck"), attribute.Int("pid", 42))
	other := resource.NewSchemaless(attribute.String("service.name", "other"))
	scope := instrumentation.Scope{Name: "flightdeck", Version: "1.2.3", SchemaURL: "https://scope.schema",
		Attributes: attribute.NewSet(attribute.Bool("scoped", true))}

	full := tracetest.SpanStub{
		Name: "step build", SpanContext: span, Parent: parent, SpanKind: trace.SpanKindServer,
		StartTime: start, EndTime: start.Add(1500 * time.Millisecond),
		Attributes: []attribute.KeyValue{
			attribute.String("s", "text"), attribute.String("empty", ""), attribute.Bool("t", true), attribute.Bool("f", false),
			attribute.Int64("i", -7), attribute.Int64("zero", 0), attribute.Float64("x", 2.5),
			attribute.BoolSlice("bs", []bool{true, false}), attribute.Int64Slice("is", []int64{1, -2}),
			attribute.Float64Slice("xs", []float64{0.5}), attribute.StringSlice("ss", []string{"a", ""}),
			attribute.ByteSlice("raw", []byte{0, 1, 255}),
			attribute.Slice("mixed", attribute.StringValue("m"), attribute.Int64Value(3)),
			attribute.Map("m", attribute.String("k", "v"), attribute.Int64("n", 1)),
		},
		Events: []sdktrace.Event{{Name: "exception", Time: start.Add(time.Second),
			Attributes: []attribute.KeyValue{attribute.String("exception.message", "exit status 1")}, DroppedAttributeCount: 2}},
		Links:             []sdktrace.Link{{SpanContext: linked, Attributes: []attribute.KeyValue{attribute.String("flightdeck.link", "submit")}, DroppedAttributeCount: 1}},
		Status:            sdktrace.Status{Code: codes.Error, Description: "step build failed"},
		DroppedAttributes: 3, DroppedEvents: 4, DroppedLinks: 5,
		Resource: res, InstrumentationScope: scope,
	}
	okSpan := tracetest.SpanStub{Name: "task.run deploy", SpanContext: root, SpanKind: trace.SpanKindConsumer,
		StartTime: start, EndTime: start.Add(time.Second), Status: sdktrace.Status{Code: codes.Ok},
		Resource: res, InstrumentationScope: scope}
	otherSpan := tracetest.SpanStub{Name: "elsewhere", SpanContext: root, StartTime: start, EndTime: start,
		Resource: other, InstrumentationScope: instrumentation.Scope{Name: "lib"}}

	got := decodeRequest(t, encodeTraces(tracetest.SpanStubs{full, okSpan, otherSpan}.Snapshots()))

	any := func(v *commonpb.AnyValue) *commonpb.AnyValue { return v }
	sv := func(s string) *commonpb.AnyValue {
		return any(&commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
	}
	iv := func(i int64) *commonpb.AnyValue {
		return any(&commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: i}})
	}
	bv := func(b bool) *commonpb.AnyValue {
		return any(&commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}})
	}
	dv := func(d float64) *commonpb.AnyValue {
		return any(&commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: d}})
	}
	arr := func(vs ...*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vs}}}
	}
	kv := func(k string, v *commonpb.AnyValue) *commonpb.KeyValue { return &commonpb.KeyValue{Key: k, Value: v} }
	startNs := uint64(start.UnixNano())

	want := &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource:  &resourcepb.Resource{Attributes: []*commonpb.KeyValue{kv("pid", iv(42)), str("service.name", "flightdeck")}},
		SchemaUrl: "https://opentelemetry.io/schemas/1.26.0",
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope:     &commonpb.InstrumentationScope{Name: "flightdeck", Version: "1.2.3", Attributes: []*commonpb.KeyValue{kv("scoped", bv(true))}},
			SchemaUrl: "https://scope.schema",
			Spans: []*tracepb.Span{{
				TraceId: tid[:], SpanId: []byte{1, 1, 1, 1, 1, 1, 1, 1}, TraceState: "vendor=value,other=x",
				ParentSpanId: []byte{2, 2, 2, 2, 2, 2, 2, 2},
				Flags:        0x01 | 0x100 | 0x200, // sampled, parent known to be remote, and it was
				Name:         "step build", Kind: tracepb.Span_SPAN_KIND_SERVER,
				StartTimeUnixNano: startNs, EndTimeUnixNano: startNs + 1_500_000_000,
				Attributes: []*commonpb.KeyValue{
					str("s", "text"), str("empty", ""), kv("t", bv(true)), kv("f", bv(false)), kv("i", iv(-7)), kv("zero", iv(0)), kv("x", dv(2.5)),
					kv("bs", arr(bv(true), bv(false))), kv("is", arr(iv(1), iv(-2))), kv("xs", arr(dv(0.5))), kv("ss", arr(sv("a"), sv(""))),
					kv("raw", &commonpb.AnyValue{Value: &commonpb.AnyValue_BytesValue{BytesValue: []byte{0, 1, 255}}}),
					kv("mixed", arr(sv("m"), iv(3))),
					kv("m", &commonpb.AnyValue{Value: &commonpb.AnyValue_KvlistValue{KvlistValue: &commonpb.KeyValueList{
						Values: []*commonpb.KeyValue{str("k", "v"), kv("n", iv(1))}}}}),
				},
				DroppedAttributesCount: 3,
				Events: []*tracepb.Span_Event{{TimeUnixNano: startNs + 1_000_000_000, Name: "exception",
					Attributes: []*commonpb.KeyValue{str("exception.message", "exit status 1")}, DroppedAttributesCount: 2}},
				DroppedEventsCount: 4,
				Links: []*tracepb.Span_Link{{TraceId: tidB[:], SpanId: []byte{3, 3, 3, 3, 3, 3, 3, 3},
					Attributes: []*commonpb.KeyValue{str("flightdeck.link", "submit")}, DroppedAttributesCount: 1,
					Flags: 0x100 | 0x200}},
				DroppedLinksCount: 5,
				Status:            &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "step build failed"},
			}, {
				TraceId: tidB[:], SpanId: []byte{4, 4, 4, 4, 4, 4, 4, 4}, Flags: 0x01 | 0x100,
				Name: "task.run deploy", Kind: tracepb.Span_SPAN_KIND_CONSUMER,
				StartTimeUnixNano: startNs, EndTimeUnixNano: startNs + 1_000_000_000,
				Status: &tracepb.Status{Code: tracepb.Status_STATUS_CODE_OK},
			}},
		}},
	}, {
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "other")}},
		ScopeSpans: []*tracepb.ScopeSpans{{
			Scope: &commonpb.InstrumentationScope{Name: "lib"},
			Spans: []*tracepb.Span{{TraceId: tidB[:], SpanId: []byte{4, 4, 4, 4, 4, 4, 4, 4}, Flags: 0x01 | 0x100,
				Name: "elsewhere", StartTimeUnixNano: startNs, EndTimeUnixNano: startNs, Status: &tracepb.Status{}}},
		}},
	}}}
	require.True(t, proto.Equal(want, got), "want\n%s\ngot\n%s", prototext.Format(want), prototext.Format(got))
}

func TestEncodeLongMessages(t *testing.T) {
	t.Parallel()
	// Lengths of 128 and more take two varint bytes, 16384 three: the
	// length put in front of a nested message must shift what follows.
	long := string(make([]byte, 20000))
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}})
	stub := tracetest.SpanStub{Name: "n", SpanContext: sc, Attributes: []attribute.KeyValue{attribute.String("a", long[:200]), attribute.String("b", long)},
		Resource: resource.Empty()}
	got := decodeRequest(t, encodeTraces(tracetest.SpanStubs{stub}.Snapshots()))
	attrs := got.ResourceSpans[0].ScopeSpans[0].Spans[0].Attributes
	require.Len(t, attrs[0].Value.GetStringValue(), 200)
	require.Len(t, attrs[1].Value.GetStringValue(), 20000)
	require.Equal(t, "n", got.ResourceSpans[0].ScopeSpans[0].Spans[0].Name)
}
