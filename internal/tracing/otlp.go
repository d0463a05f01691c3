package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"flightdeck/internal/backoff"
)

// otlpExporter sends spans to an OTLP/HTTP collector as protobuf (POST
// /v1/traces, application/x-protobuf). It stands in for otlptracehttp,
// whose internals import grpc and protobuf: about a hundred packages a
// first build would compile for one POST.
type otlpExporter struct {
	cfg    otlpConfig
	client *http.Client
	// retryBase is the first retry's wait (doubling, capped at
	// retryCeiling); tests shorten it.
	retryBase, retryCeiling time.Duration
	stopped                 atomic.Bool
}

func newOTLPExporter(cfg otlpConfig) *otlpExporter {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = cfg.tls
	return &otlpExporter{cfg: cfg, client: &http.Client{Transport: tr}, retryBase: 500 * time.Millisecond, retryCeiling: 5 * time.Second}
}

// errStopped is what an export after Shutdown answers.
var errStopped = errors.New("the OTLP exporter is shut down")

// ExportSpans sends spans in one request, retrying what the collector
// asks to retry (429, 502, 503, 504, or no answer) until the export
// timeout; spans it refuses otherwise are dropped with the error.
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if e.stopped.Load() {
		return errStopped
	}
	if len(spans) == 0 {
		return nil
	}
	body := encodeTraces(spans)
	if e.cfg.gzip {
		var z bytes.Buffer
		w := gzip.NewWriter(&z)
		_, _ = w.Write(body) // into memory: no error
		_ = w.Close()
		body = z.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		retry, wait, err := e.post(ctx, body)
		if !retry {
			return err
		}
		if wait <= 0 {
			wait = backoff.Exponential(e.retryBase, e.retryCeiling, attempt)
		}
		if d, ok := ctx.Deadline(); ok && time.Until(d) < wait {
			return fmt.Errorf("error exporting %d spans to %s (no retry within OTEL_EXPORTER_OTLP_TIMEOUT, %s): %w", len(spans), e.cfg.url, e.cfg.timeout, err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("error exporting %d spans to %s: %w (last: %w)", len(spans), e.cfg.url, ctx.Err(), err)
		case <-t.C:
		}
	}
}

// post makes one request: retry says whether another may succeed, after
// wait when the collector said (Retry-After).
func (e *otlpExporter) post(ctx context.Context, body []byte) (retry bool, wait time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, fmt.Errorf("error making the OTLP request: %w", err)
	}
	for k, v := range e.cfg.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("User-Agent", "flightdeck-otlp-exporter")
	if e.cfg.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	res, err := e.client.Do(req)
	if err != nil {
		// No answer (a collector restarting, a reset connection) is worth
		// another try unless the export's time is up; a certificate that
		// does not verify will not verify on the next one either.
		var cert *tls.CertificateVerificationError
		return ctx.Err() == nil && !errors.As(err, &cert), 0, fmt.Errorf("error sending spans to the OTLP collector: %w", err)
	}
	defer res.Body.Close()
	// The body is an ExportTraceServiceResponse (partial success) or a
	// google.rpc.Status; its text is enough for an error message.
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	switch res.StatusCode {
	case http.StatusOK, http.StatusAccepted, http.StatusNoContent:
		if rejected, why := partialSuccess(msg); rejected > 0 || why != "" {
			// Not retried: the collector took the rest and refuses these
			// for what they are. The SDK reports the error.
			return false, 0, fmt.Errorf("the OTLP collector rejected %d spans: %s", rejected, why)
		}
		return false, 0, nil
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true, retryAfter(res.Header.Get("Retry-After")), fmt.Errorf("the OTLP collector answered %s", res.Status)
	}
	return false, 0, fmt.Errorf("the OTLP collector refused the spans: %s: %s", res.Status, printable(msg))
}

// partialSuccess reads an ExportTraceServiceResponse: its
// partial_success (field 1) holds rejected_spans (1, varint) and
// error_message (2). Anything unreadable counts as full success, as an
// empty body does.
func partialSuccess(b []byte) (rejected int64, why string) {
	ps, ok := pbField(b, 1, wireBytes)
	if !ok {
		return 0, ""
	}
	if v, ok := pbField(ps, 1, wireVarint); ok {
		n, _ := binary.Uvarint(v)
		rejected = int64(n)
	}
	if v, ok := pbField(ps, 2, wireBytes); ok {
		why = string(v)
	}
	return rejected, why
}

// pbField finds the last occurrence of field in a protobuf message (the
// wire format's rule for singular fields): a varint's bytes, or a
// length-delimited field's content.
func pbField(b []byte, field, wire int) (val []byte, found bool) {
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			return val, found
		}
		b = b[n:]
		f, w := int(tag>>3), int(tag&7)
		var v []byte
		switch w {
		case wireVarint:
			_, n = binary.Uvarint(b)
			if n <= 0 {
				return val, found
			}
			v, b = b[:n], b[n:]
		case wireFixed64, wireFixed32:
			size := 8
			if w == wireFixed32 {
				size = 4
			}
			if len(b) < size {
				return val, found
			}
			v, b = b[:size], b[size:]
		case wireBytes:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				return val, found
			}
			v, b = b[n:n+int(l)], b[n+int(l):]
		default:
			return val, found // groups: not in OTLP
		}
		if f == field && w == wire {
			val, found = v, true
		}
	}
	return val, found
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; 0 for
// none or garbage.
func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}

// printable keeps the readable part of a protobuf error body (its
// message string) for a log line.
func printable(b []byte) string {
	s := strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '\uFFFD' {
			return ' '
		}
		return r
	}, string(b))
	return strings.Join(strings.Fields(s), " ")
}

// Shutdown stops the exporter: later exports fail, idle connections close.
func (e *otlpExporter) Shutdown(context.Context) error {
	e.stopped.Store(true)
	e.client.CloseIdleConnections()
	return nil
}
