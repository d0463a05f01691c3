// Package local is the local provider: it deploys for real on this host.
//
//   - local.dns_create / local.dns_delete: a route in flightdeck's own
//     reverse proxy for host "<app>.<env>" (requests with Host
//     "<app>.<env>.localhost", port or not, reach it).
//   - local.cert_issue / local.cert_revoke: an X.509 certificate from a
//     local CA kept in Postgres; the PEM goes to the step's output artifact;
//     revoked serials are in the CRL served at /local/ca.crl.
//   - local.instance_start / local.instance_stop: the built-in demo app
//     ("flightdeck demoapp --version V") as a child process in its own
//     process group on a free loopback port, made its route's current
//     instance once /healthz answers 200.
//   - local.monitor_create / local.monitor_delete: a periodic probe of the
//     route's current instance; alerts open and resolve in local_alerts.
//
// Which app and env: every action takes with.host when given (dns and
// monitor: "app.env"; cert: the certificate's DNS name, by default
// "app.env.localhost"), else derives it from the task's params app and env,
// which the web-service pipeline has. instance_start needs with.version.
// Bad or missing inputs are Permanent errors.
//
// Idempotency: every change is committed together with a local_effects row
// keyed by the step's idempotency key; a re-run with a key already recorded
// returns the recorded output and does nothing. instance_start records its
// instance (by key) before starting a process, so a re-run after a crash
// finds the process the earlier attempt left, stops it and starts afresh:
// one instance per key, whatever happened.
//
// Undo: a compensation (Input.Compensating) restores what the forward
// action found, read from Input.Previous: dns_delete leaves a route that
// dns_create found existing; cert_revoke revokes the issued certificate;
// monitor_delete removes only a monitor monitor_create made; instance_stop
// stops the new instance and makes the previous one current again
// (restarting it if its process is gone), so a failed v2 deploy leaves v1
// serving. dns_create, cert_issue and monitor_create as compensations undo
// their delete/revoke counterparts (a revoked certificate cannot be
// un-revoked: a fresh one is issued). instance_start and instance_stop only
// pair one way: instance_stop is instance_start's undo.
//
// Blue/green: after a switch the previous instance keeps running as a
// standby for the undo; older ones of the same route are stopped.
//
// Crash recovery (Recover, at serve start): instances recorded as running
// on this node whose process is alive and is ours (its command line names
// the instance) are adopted; a dead one that is its route's current
// instance is restarted with the same version (so the route keeps serving
// after a host reboot), other dead ones are marked stopped. Instances still
// "starting" belong to the re-run of their step (same key), which stops
// what the earlier attempt left; only starts abandoned for AbandonedStart
// (their task never came back) are stopped and marked failed.
package local

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/action"
)

// Defaults for Config's zero values.
const (
	HealthTimeoutDefault   = 15 * time.Second
	HealthFailuresDefault  = 3
	StopTimeoutDefault     = 5 * time.Second
	MonitorIntervalDefault = 30 * time.Second
	MonitorTickDefault     = time.Second
	CertValidityDefault    = 90 * 24 * time.Hour
	AbandonedStartDefault  = 5 * time.Minute
)

// Config configures the provider.
type Config struct {
	Store  *store.Store
	Logger *slog.Logger
	// Node names this host in local_instances (default os.Hostname()).
	Node string
	// Executable is started as "Executable demoapp --version V …"
	// (default os.Executable(): the server itself).
	Executable string
	// HealthTimeout bounds the wait for a new instance's /healthz (default 15s).
	HealthTimeout time.Duration
	// HealthFailures consecutive non-200 answers fail the start early (default 3).
	HealthFailures int
	// StopTimeout is the wait between SIGTERM and SIGKILL (default 5s).
	StopTimeout time.Duration
	// MonitorInterval is a new monitor's probe interval unless with.interval
	// says otherwise (default 30s).
	MonitorInterval time.Duration
	// MonitorTick is how often RunMonitors looks for due monitors (default 1s).
	MonitorTick time.Duration
	// CertValidity is an issued certificate's lifetime (default 90 days).
	CertValidity time.Duration
	// AbandonedStart: Recover stops a "starting" instance no attempt has
	// touched for this long (default 5m, well above HealthTimeout).
	AbandonedStart time.Duration
}

// Provider implements the local.* actions.
type Provider struct {
	cfg   Config
	st    *store.Store
	log   *slog.Logger
	node  string
	exe   string
	mu    sync.Mutex
	procs map[int]*child // processes this provider started, by pid
	// proxyURL: this process's listener, once serving (SetProxyURL)
	proxyURL atomic.Pointer[string]
}

// New builds a provider.
func New(cfg Config) (*Provider, error) {
	if cfg.Store == nil {
		return nil, errors.New("local provider: no store")
	}
	cfg.HealthTimeout = cmp.Or(cfg.HealthTimeout, HealthTimeoutDefault)
	cfg.HealthFailures = cmp.Or(cfg.HealthFailures, HealthFailuresDefault)
	cfg.StopTimeout = cmp.Or(cfg.StopTimeout, StopTimeoutDefault)
	cfg.MonitorInterval = cmp.Or(cfg.MonitorInterval, MonitorIntervalDefault)
	cfg.MonitorTick = cmp.Or(cfg.MonitorTick, MonitorTickDefault)
	cfg.CertValidity = cmp.Or(cfg.CertValidity, CertValidityDefault)
	cfg.AbandonedStart = cmp.Or(cfg.AbandonedStart, AbandonedStartDefault)
	p := &Provider{cfg: cfg, st: cfg.Store, log: cfg.Logger, node: cfg.Node, exe: cfg.Executable, procs: map[int]*child{}}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.node == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("local provider: hostname: %w", err)
		}
		p.node = h
	}
	if p.exe == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("local provider: own executable: %w", err)
		}
		p.exe = exe
	}
	return p, nil
}

// Register adds the local.* actions to reg.
func (p *Provider) Register(reg action.Registry) {
	reg["local.dns_create"] = p.wrap("local.dns_create", p.dnsCreate)
	reg["local.dns_delete"] = p.wrap("local.dns_delete", p.dnsDelete)
	reg["local.cert_issue"] = p.wrap("local.cert_issue", p.certIssue)
	reg["local.cert_revoke"] = p.wrap("local.cert_revoke", p.certRevoke)
	reg["local.instance_start"] = p.wrap("local.instance_start", p.instanceStart)
	reg["local.instance_stop"] = p.wrap("local.instance_stop", p.instanceStop)
	reg["local.traffic_shift"] = p.wrap("local.traffic_shift", p.trafficShift)
	reg["local.monitor_create"] = p.wrap("local.monitor_create", p.monitorCreate)
	reg["local.monitor_delete"] = p.wrap("local.monitor_delete", p.monitorDelete)
}

// Inputs are the with fields each local action takes (the pipeline loader
// refuses others, contract §6).
var Inputs = map[string][]string{
	"local.dns_create":     {"host"},
	"local.dns_delete":     {"host"},
	"local.cert_issue":     {"host"},
	"local.cert_revoke":    {"host", "serial"},
	"local.instance_start": {"host", "version", "weight"},
	"local.instance_stop":  {"host", "version"},
	"local.traffic_shift":  {"host", "weight"},
	"local.monitor_create": {"host", "interval"},
	"local.monitor_delete": {"host", "interval"},
}

// SetProxyURL tells the provider the base URL of this process's HTTP
// listener (http://127.0.0.1:PORT), where the analysis action sends load.
func (p *Provider) SetProxyURL(u string) { p.proxyURL.Store(&u) }

// ProxyURL is what SetProxyURL set, "" before.
func (p *Provider) ProxyURL() string {
	if u := p.proxyURL.Load(); u != nil {
		return *u
	}
	return ""
}

// Action returns one registered action by name (tests, benchmarks).
func (p *Provider) Action(name string) action.Action {
	reg := action.Registry{}
	p.Register(reg)
	return reg[name]
}

type actionFunc func(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error)

// wrap is the part every local action shares: a key is required, an
// effect already recorded under it is returned as is, store errors that a
// retry cannot fix become Permanent.
func (p *Provider) wrap(name string, fn actionFunc) action.Action {
	return action.Func(func(ctx context.Context, in action.Input) (json.RawMessage, error) {
		if in.IdempotencyKey == "" {
			return nil, &action.Permanent{Err: fmt.Errorf("%s: no idempotency key", name)}
		}
		if in.Team == "" {
			return nil, &action.Permanent{Err: fmt.Errorf("%s: no team", name)}
		}
		out, err := p.st.LocalEffectGet(ctx, in.IdempotencyKey)
		if err == nil {
			in.Log(name + ": already done under this idempotency key; nothing to do")
			return out, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		// What the action says goes to the step's events and its artifact.
		logf, w := in.Log, in.Output
		in.Log = func(line string) {
			logf(line)
			if w != nil {
				fmt.Fprintln(w, line)
			}
		}
		res, err := fn(ctx, in, store.LocalEffect{Key: in.IdempotencyKey, Action: name, TaskID: in.TaskID})
		if err != nil {
			if errors.Is(err, store.ErrForbidden) || errors.Is(err, store.ErrNotFound) {
				var perm *action.Permanent
				if !errors.As(err, &perm) {
					err = &action.Permanent{Err: err}
				}
			}
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, fmt.Errorf("%s: encoding output: %w", name, err)
		}
		return b, nil
	})
}

var (
	labelRE   = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	versionRE = regexp.MustCompile(`^[0-9A-Za-z.+-]{1,40}$`)
)

// validHost reports whether h is a lowercase DNS name of two labels or more.
func validHost(h string) bool {
	if len(h) > 253 {
		return false
	}
	labels := strings.Split(h, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if !labelRE.MatchString(l) {
			return false
		}
	}
	return true
}

// RouteHost maps a request's Host header (port or not, ".localhost" or
// not, any case) to the route host it names, or "" when it cannot name one.
func RouteHost(hostHeader string) string {
	h := strings.ToLower(strings.TrimSpace(hostHeader))
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(h, ".")
	h = strings.TrimSuffix(h, ".localhost")
	if net.ParseIP(h) != nil || !validHost(h) {
		return ""
	}
	return h
}

// host reads the target host: with.host, else params app and env. For
// routes and monitors the ".localhost" suffix is dropped.
func host(in action.Input, keepLocalhost bool) (string, error) {
	if v, ok := in.With["host"]; ok {
		s, ok := v.(string)
		if !ok {
			return "", &action.Permanent{Err: fmt.Errorf("with.host: want a string, got %T", v)}
		}
		h := strings.TrimSuffix(strings.ToLower(s), ".")
		if !keepLocalhost {
			h = strings.TrimSuffix(h, ".localhost")
		}
		if !validHost(h) {
			return "", &action.Permanent{Err: fmt.Errorf("with.host: %q is not a host name like app.env", s)}
		}
		return h, nil
	}
	app, _ := in.Params["app"].(string)
	env, _ := in.Params["env"].(string)
	if app == "" || env == "" {
		return "", &action.Permanent{Err: errors.New("with.host is missing and the task has no app and env parameters")}
	}
	h := app + "." + env
	if !validHost(h) {
		return "", &action.Permanent{Err: fmt.Errorf("params app and env: %q is not a host name", h)}
	}
	if keepLocalhost {
		h += ".localhost"
	}
	return h, nil
}

// previous decodes the forward action's output for an undo; false when the
// forward action never completed (nothing to undo).
func previous(in action.Input, v any) (bool, error) {
	if len(in.Previous) == 0 || string(in.Previous) == "{}" || string(in.Previous) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(in.Previous, v); err != nil {
		return false, &action.Permanent{Err: fmt.Errorf("output of the step to undo: %w", err)}
	}
	return true, nil
}

// forwardKey is the idempotency key of the step a compensation undoes.
func forwardKey(in action.Input) string { return strings.TrimSuffix(in.IdempotencyKey, ":compensate") }
