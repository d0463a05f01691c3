package tracing

import (
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
)

// exportTimeoutDefault is OTEL_EXPORTER_OTLP_TIMEOUT's default (the
// specification's 10 s): one export, its retries included.
const exportTimeoutDefault = 10 * time.Second

// otlpConfig is the exporter's settings, read from the standard
// OTEL_EXPORTER_OTLP_* variables (the TRACES_ one of each wins over the
// general one).
type otlpConfig struct {
	url      string // where requests go, /v1/traces included
	headers  map[string]string
	timeout  time.Duration
	gzip     bool
	tls      *tls.Config
	insecure bool // http://
}

// env reads the TRACES_ variant of an OTEL_EXPORTER_OTLP_ setting, else
// the general one, and names the one it read for errors.
func env(getenv func(string) string, setting string) (name, value string) {
	name = "OTEL_EXPORTER_OTLP_TRACES_" + setting
	if v := strings.TrimSpace(getenv(name)); v != "" {
		return name, v
	}
	name = "OTEL_EXPORTER_OTLP_" + setting
	return name, strings.TrimSpace(getenv(name))
}

// loadOTLPConfig reads and checks the exporter's settings; an error names
// the variable at fault.
func loadOTLPConfig(getenv func(string) string) (otlpConfig, error) {
	var c otlpConfig
	if name, p := env(getenv, "PROTOCOL"); p != "" && p != "http/protobuf" {
		if p == "grpc" {
			return c, fmt.Errorf("%s: flightdeck exports traces over OTLP/HTTP only (http/protobuf); point OTEL_EXPORTER_OTLP_ENDPOINT at the collector's OTLP/HTTP receiver (usually port 4318) and unset %s", name, name)
		}
		return c, fmt.Errorf("%s: want http/protobuf (OTLP/HTTP, the collector's receiver usually on port 4318), got %q", name, p)
	}

	// The signal's own endpoint is used as given; the general one is a
	// base to which the signal's path is added (the specification's rule).
	name, given := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	raw := given
	if raw == "" {
		name, given = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"))
		raw = strings.TrimRight(cmp.Or(given, "http://localhost:4318"), "/") + "/v1/traces"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return c, fmt.Errorf("%s: not a URL: %w", name, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return c, fmt.Errorf("%s: want an http:// or https:// URL with a host (the collector's OTLP/HTTP receiver, usually :4318), got %q", name, given)
	}
	c.url, c.insecure = u.String(), u.Scheme == "http"

	c.headers = map[string]string{}
	for _, setting := range []string{"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"} { // TRACES_ wins per key
		if err := parseHeaders(setting, getenv(setting), c.headers); err != nil {
			return c, err
		}
	}

	c.timeout = exportTimeoutDefault
	if name, v := env(getenv, "TIMEOUT"); v != "" {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 || ms > int64(time.Hour/time.Millisecond) {
			return c, fmt.Errorf("%s: want a number of milliseconds between 1 and 3600000, got %q", name, v)
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}

	switch name, v := env(getenv, "COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return c, fmt.Errorf("%s: want gzip or none, got %q", name, v)
	}

	c.tls, err = loadTLS(getenv)
	return c, err
}

// parseHeaders adds the headers of a W3C-baggage-like list (k1=v1,k2=v2,
// keys and values URL-encoded) to into.
func parseHeaders(name, list string, into map[string]string) error {
	for item := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		key, kerr := url.PathUnescape(strings.TrimSpace(k))
		val, verr := url.PathUnescape(strings.TrimSpace(v))
		if !ok || kerr != nil || verr != nil || !validHeaderName(key) || strings.ContainsAny(val, "\r\n\x00") {
			return fmt.Errorf("%s: want key=value pairs separated by commas (URL-encoded), got %q", name, strings.TrimSpace(item))
		}
		into[key] = val
	}
	return nil
}

func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for _, r := range k {
		// RFC 9110 token characters.
		if r >= 0x80 || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// loadTLS builds the TLS settings from OTEL_EXPORTER_OTLP_CERTIFICATE (a
// PEM file of CAs to trust instead of the system's) and the client
// certificate and key (OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE,
// OTEL_EXPORTER_OTLP_CLIENT_KEY); with none set, the system roots.
func loadTLS(getenv func(string) string) (*tls.Config, error) {
	caName, ca := env(getenv, "CERTIFICATE")
	certName, cert := env(getenv, "CLIENT_CERTIFICATE")
	keyName, key := env(getenv, "CLIENT_KEY")
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", caName, err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no PEM certificate in %s", caName, ca)
		}
	}
	if cert != "" || key != "" {
		if cert == "" || key == "" {
			return nil, fmt.Errorf("%s and %s: set both or neither", certName, keyName)
		}
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%s, %s: %w", certName, keyName, err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
