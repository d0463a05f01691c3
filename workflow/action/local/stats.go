package local

import (
	"slices"
	"sync"
	"time"
)

// ProxyStats keeps the recent requests the proxy sent to each instance, so
// the analysis action's proxy provider can measure a canary over the window
// since its previous measurement (contract §11). The proxy of this process
// records; the analysis of this process reads: its synthetic load goes
// through this process's proxy, so it is measured wherever the worker runs.
type ProxyStats struct {
	mu   sync.Mutex
	byID map[string]*requestRing
}

// proxyStatsKeep bounds the requests kept per instance (a ring): at the
// contract's load of 20/s that is over 16 minutes of them.
const proxyStatsKeep = 20000

type request struct {
	at      time.Time
	latency time.Duration
	code    int
}

type requestRing struct {
	reqs []request
	next int // where the next one goes once full
}

// NewProxyStats makes an empty recorder.
func NewProxyStats() *ProxyStats { return &ProxyStats{byID: map[string]*requestRing{}} }

// DefaultProxyStats is the process's recorder: the proxy and the analysis
// action of one process share it.
var DefaultProxyStats = NewProxyStats()

// Record notes one request sent to instance id.
func (s *ProxyStats) Record(id string, at time.Time, latency time.Duration, code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.byID[id]
	if r == nil {
		if len(s.byID) > 1000 { // instances come and go: start over rather than grow
			clear(s.byID)
		}
		r = &requestRing{}
		s.byID[id] = r
	}
	q := request{at: at, latency: latency, code: code}
	if len(r.reqs) < proxyStatsKeep {
		r.reqs = append(r.reqs, q)
		return
	}
	r.reqs[r.next] = q
	r.next = (r.next + 1) % proxyStatsKeep
}

// Window is what an instance's requests in (from, to] measured.
type Window struct {
	Requests   int
	Errors     int // 5xx
	LatencyP95 time.Duration
}

// Window measures instance id's requests that ended in (from, to].
func (s *ProxyStats) Window(id string, from, to time.Time) Window {
	s.mu.Lock()
	var lat []time.Duration
	var w Window
	if r := s.byID[id]; r != nil {
		for _, q := range r.reqs {
			if q.at.After(from) && !q.at.After(to) {
				w.Requests++
				if q.code >= 500 {
					w.Errors++
				}
				lat = append(lat, q.latency)
			}
		}
	}
	s.mu.Unlock()
	if len(lat) > 0 {
		slices.Sort(lat)
		w.LatencyP95 = lat[(len(lat)*95+99)/100-1]
	}
	return w
}
