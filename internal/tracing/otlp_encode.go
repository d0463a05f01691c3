package tracing

import (
	"encoding/binary"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// This file writes an OTLP ExportTraceServiceRequest in the protobuf wire
// format by hand: the handful of messages below is all a trace export
// needs, and the generated types would bring google.golang.org/protobuf
// (and, through the collector package, grpc) into every build. Field
// numbers are opentelemetry-proto v1's (trace.proto, common.proto,
// resource.proto, trace_service.proto); a test decodes the output with the
// official types.

// Wire types.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// pb is a protobuf writer. Nested messages are written in place and their
// length put in front when they end (begin/end), so nothing is encoded
// twice.
type pb struct {
	b     []byte
	open  []int // start of each message begun and not ended
	short [binary.MaxVarintLen64]byte
}

func (p *pb) tag(field, wire int) { p.varint(uint64(field)<<3 | uint64(wire)) }

func (p *pb) varint(v uint64) { p.b = binary.AppendUvarint(p.b, v) }

// begin starts the embedded message field.
func (p *pb) begin(field int) {
	p.tag(field, wireBytes)
	p.open = append(p.open, len(p.b))
}

// end closes the message begin started: its length goes before it.
func (p *pb) end() {
	start := p.open[len(p.open)-1]
	p.open = p.open[:len(p.open)-1]
	n := len(p.b) - start
	k := binary.PutUvarint(p.short[:], uint64(n))
	p.b = append(p.b, p.short[:k]...)
	copy(p.b[start+k:], p.b[start:start+n])
	copy(p.b[start:], p.short[:k])
}

// str writes a string field, left out when empty (proto3's default).
func (p *pb) str(field int, s string) {
	if s != "" {
		p.strAlways(field, s)
	}
}

func (p *pb) strAlways(field int, s string) {
	p.tag(field, wireBytes)
	p.varint(uint64(len(s)))
	p.b = append(p.b, s...)
}

func (p *pb) bytes(field int, b []byte) {
	p.tag(field, wireBytes)
	p.varint(uint64(len(b)))
	p.b = append(p.b, b...)
}

// uint writes a varint field, left out when 0.
func (p *pb) uint(field int, v uint64) {
	if v != 0 {
		p.tag(field, wireVarint)
		p.varint(v)
	}
}

func (p *pb) fixed64(field int, v uint64) {
	p.tag(field, wireFixed64)
	p.b = binary.LittleEndian.AppendUint64(p.b, v)
}

func (p *pb) fixed32(field int, v uint32) {
	p.tag(field, wireFixed32)
	p.b = binary.LittleEndian.AppendUint32(p.b, v)
}

// Span flags (trace.proto SpanFlags): the low byte is the W3C trace
// flags; these two say whether the parent (or linked) context is known to
// be remote, and whether it was.
const (
	flagHasIsRemote = 0x100
	flagIsRemote    = 0x200
)

func contextFlags(sc trace.SpanContext) uint32 {
	f := uint32(sc.TraceFlags()) | flagHasIsRemote
	if sc.IsRemote() {
		f |= flagIsRemote
	}
	return f
}

// encodeTraces is the ExportTraceServiceRequest of spans: one
// ResourceSpans per resource, one ScopeSpans per scope within it, in the
// order they first appear.
func encodeTraces(spans []sdktrace.ReadOnlySpan) []byte {
	type scoped struct {
		scope instrumentation.Scope
		spans []sdktrace.ReadOnlySpan
	}
	type resourced struct {
		res    *resource.Resource
		scopes []*scoped
	}
	var groups []*resourced
	byRes := map[attribute.Distinct]*resourced{}
	for _, s := range spans {
		key := s.Resource().Equivalent()
		g := byRes[key]
		if g == nil {
			g = &resourced{res: s.Resource()}
			byRes[key] = g
			groups = append(groups, g)
		}
		var sc *scoped
		is := s.InstrumentationScope()
		for _, c := range g.scopes {
			if c.scope.Name == is.Name && c.scope.Version == is.Version && c.scope.SchemaURL == is.SchemaURL && c.scope.Attributes.Equals(&is.Attributes) {
				sc = c
				break
			}
		}
		if sc == nil {
			sc = &scoped{scope: is}
			g.scopes = append(g.scopes, sc)
		}
		sc.spans = append(sc.spans, s)
	}

	p := &pb{b: make([]byte, 0, 512*len(spans))}
	for _, g := range groups {
		p.begin(1) // ExportTraceServiceRequest.resource_spans
		p.begin(1) // ResourceSpans.resource
		for _, kv := range g.res.Attributes() {
			p.keyValue(1, kv) // Resource.attributes
		}
		p.end()
		for _, sc := range g.scopes {
			p.begin(2) // ResourceSpans.scope_spans
			p.begin(1) // ScopeSpans.scope
			p.str(1, sc.scope.Name)
			p.str(2, sc.scope.Version)
			for _, kv := range sc.scope.Attributes.ToSlice() {
				p.keyValue(3, kv)
			}
			p.end()
			for _, s := range sc.spans {
				p.begin(2) // ScopeSpans.spans
				p.span(s)
				p.end()
			}
			p.str(3, sc.scope.SchemaURL)
			p.end()
		}
		p.str(3, g.res.SchemaURL())
		p.end()
	}
	return p.b
}

// span writes a Span's fields.
func (p *pb) span(s sdktrace.ReadOnlySpan) {
	sc := s.SpanContext()
	tid, sid := sc.TraceID(), sc.SpanID()
	p.bytes(1, tid[:])
	p.bytes(2, sid[:])
	p.str(3, sc.TraceState().String())
	if psid := s.Parent().SpanID(); psid.IsValid() {
		p.bytes(4, psid[:])
	}
	p.str(5, s.Name())
	p.uint(6, uint64(s.SpanKind())) // trace.SpanKind numbers OTLP's SpanKind alike
	p.fixed64(7, unixNano(s.StartTime().UnixNano()))
	p.fixed64(8, unixNano(s.EndTime().UnixNano()))
	for _, kv := range s.Attributes() {
		p.keyValue(9, kv)
	}
	p.uint(10, count(s.DroppedAttributes()))
	for _, e := range s.Events() {
		p.begin(11)
		p.fixed64(1, unixNano(e.Time.UnixNano()))
		p.str(2, e.Name)
		for _, kv := range e.Attributes {
			p.keyValue(3, kv)
		}
		p.uint(4, count(e.DroppedAttributeCount))
		p.end()
	}
	p.uint(12, count(s.DroppedEvents()))
	for _, l := range s.Links() {
		ltid, lsid := l.SpanContext.TraceID(), l.SpanContext.SpanID()
		p.begin(13)
		p.bytes(1, ltid[:])
		p.bytes(2, lsid[:])
		p.str(3, l.SpanContext.TraceState().String())
		for _, kv := range l.Attributes {
			p.keyValue(4, kv)
		}
		p.uint(5, count(l.DroppedAttributeCount))
		p.fixed32(6, contextFlags(l.SpanContext))
		p.end()
	}
	p.uint(14, count(s.DroppedLinks()))
	p.begin(15) // Status
	st := s.Status()
	p.str(2, st.Description)
	switch st.Code { // the SDK's codes are numbered Unset, Error, Ok; OTLP's Unset, Ok, Error
	case codes.Ok:
		p.uint(3, 1)
	case codes.Error:
		p.uint(3, 2)
	}
	p.end()
	p.fixed32(16, uint32(sc.TraceFlags())|contextFlags(s.Parent())&^0xff)
}

func unixNano(n int64) uint64 { return uint64(max(n, 0)) }

// count is a dropped-items count as OTLP's uint32 holds it.
func count(n int) uint64 { return uint64(min(max(n, 0), math.MaxUint32)) }

// keyValue writes a KeyValue field.
func (p *pb) keyValue(field int, kv attribute.KeyValue) {
	p.begin(field)
	p.str(1, string(kv.Key))
	p.begin(2)
	p.anyValue(kv.Value)
	p.end()
	p.end()
}

// anyValue writes an AnyValue's fields. Its one-of members are written
// even when zero (false, 0, ""), since their presence is the value's type.
func (p *pb) anyValue(v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		p.tag(2, wireVarint)
		if v.AsBool() {
			p.varint(1)
		} else {
			p.varint(0)
		}
	case attribute.INT64:
		p.tag(3, wireVarint)
		p.varint(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		p.fixed64(4, math.Float64bits(v.AsFloat64()))
	case attribute.STRING:
		p.strAlways(1, v.AsString())
	case attribute.BYTESLICE:
		p.bytes(7, v.AsByteSlice())
	case attribute.BOOLSLICE:
		p.array(len(v.AsBoolSlice()), func(i int) attribute.Value { return attribute.BoolValue(v.AsBoolSlice()[i]) })
	case attribute.INT64SLICE:
		s := v.AsInt64Slice()
		p.array(len(s), func(i int) attribute.Value { return attribute.Int64Value(s[i]) })
	case attribute.FLOAT64SLICE:
		s := v.AsFloat64Slice()
		p.array(len(s), func(i int) attribute.Value { return attribute.Float64Value(s[i]) })
	case attribute.STRINGSLICE:
		s := v.AsStringSlice()
		p.array(len(s), func(i int) attribute.Value { return attribute.StringValue(s[i]) })
	case attribute.SLICE:
		s := v.AsSlice()
		p.array(len(s), func(i int) attribute.Value { return s[i] })
	case attribute.MAP:
		p.begin(6) // kvlist_value: KeyValueList
		for _, kv := range v.AsMap() {
			p.keyValue(1, kv)
		}
		p.end()
	default:
		// EMPTY: an AnyValue with nothing set.
	}
}

// array writes an array_value of n values.
func (p *pb) array(n int, at func(int) attribute.Value) {
	p.begin(5) // ArrayValue
	for i := range n {
		p.begin(1)
		p.anyValue(at(i))
		p.end()
	}
	p.end()
}
