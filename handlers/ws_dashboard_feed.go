package handlers

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"flightdeck/internal/config"
	"flightdeck/internal/metrics"
	"flightdeck/internal/notify"
)

// Dashboard feed tuning: a batch with more changed tasks than this
// re-renders every team set rather than looking their teams up; a load
// gets this long.
const (
	dashboardFeedBatch   = 500
	dashboardLoadTimeout = 10 * time.Second
)

// dashboardFeed keeps the open dashboards current with one loop per
// process: after a (coalesced) batch of task changes it loads and renders
// the live section once per team set the changes touch, and hands the same
// bytes to every dashboard socket of that set; every refresh it renders
// every set. A socket only ever gets the render of exactly its own teams,
// as the page itself shows.
//
// The loop runs while anybody subscribes. Deliveries run under mu: a
// deliver func must not block (wsConn.send does not: a full send buffer
// closes the socket).
type dashboardFeed struct {
	render   func(ctx context.Context, teamIDs []string) ([]byte, error)
	teamsOf  func(ctx context.Context, taskIDs []string) ([]string, error)
	hub      *notify.Hub
	logger   *slog.Logger
	renders  *metrics.Counter
	coalesce time.Duration
	refresh  time.Duration

	mu     sync.Mutex
	groups map[string]*dashboardGroup // by teamSetKey
	subs   int
	stop   context.CancelFunc // of the running loop; nil when none runs
}

type dashboardGroup struct {
	key   string
	teams []string
	subs  map[*dashboardSub]struct{}
}

type dashboardSub struct {
	group   *dashboardGroup
	deliver func([]byte) bool // false: the socket is gone, drop the subscription
	removed bool
}

func newDashboardFeed(h *Handler, reg *metrics.Registry) *dashboardFeed {
	return newPageFeed(h, reg, h.renderDashboardLive, "flightdeck_ws_dashboard_renders_total",
		"Live dashboard sections loaded and rendered (one per team set and batch of changes, however many sockets watch).")
}

// newPageFeed is a feed like the dashboard's for another page: render
// makes what every socket of a team set gets after its teams' task changes
// and every refresh; renders are counted under metric.
func newPageFeed(h *Handler, reg *metrics.Registry, render func(ctx context.Context, teamIDs []string) ([]byte, error), metric, help string) *dashboardFeed {
	renders := metrics.Registered(reg, metrics.NewCounter(metric, help))
	return &dashboardFeed{
		render:   render,
		teamsOf:  h.store.TaskTeamIDs,
		hub:      h.hub,
		logger:   h.logger,
		renders:  renders,
		coalesce: cmp.Or(h.cfg.DashboardCoalesce, config.DashboardCoalesceDefault),
		refresh:  cmp.Or(h.cfg.DashboardRefresh, config.DashboardRefreshDefault),
		groups:   map[string]*dashboardGroup{},
	}
}

// subscribe delivers the renders for teamIDs until the returned func is
// called or deliver returns false.
func (f *dashboardFeed) subscribe(teamIDs []string, deliver func([]byte) bool) (stop func()) {
	teams := slices.Compact(slices.Sorted(slices.Values(teamIDs)))
	key := strings.Join(teams, ",")
	f.mu.Lock()
	defer f.mu.Unlock()
	g := f.groups[key]
	if g == nil {
		g = &dashboardGroup{key: key, teams: teams, subs: map[*dashboardSub]struct{}{}}
		f.groups[key] = g
	}
	s := &dashboardSub{group: g, deliver: deliver}
	g.subs[s] = struct{}{}
	f.subs++
	if f.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f.stop = cancel
		go f.run(ctx, f.hub.SubscribeChanges())
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.remove(s)
	}
}

// remove drops s (once); the last one out stops the loop. Callers hold mu.
func (f *dashboardFeed) remove(s *dashboardSub) {
	if s.removed {
		return
	}
	s.removed = true
	delete(s.group.subs, s)
	if len(s.group.subs) == 0 {
		delete(f.groups, s.group.key)
	}
	f.subs--
	if f.subs == 0 {
		f.stop()
		f.stop = nil
	}
}

// due returns the team sets to render: all of them, or those sharing a
// team with touched.
func (f *dashboardFeed) due(all bool, touched []string) []*dashboardGroup {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*dashboardGroup
	for _, g := range f.groups {
		if all || slices.ContainsFunc(g.teams, func(id string) bool { return slices.Contains(touched, id) }) {
			out = append(out, g)
		}
	}
	return out
}

// run waits for changes (then gathers them for coalesce) or the refresh,
// works out which team sets they touch and renders each of those once.
func (f *dashboardFeed) run(ctx context.Context, changes *notify.Changes) {
	defer changes.Close()
	tick := time.NewTicker(f.refresh)
	defer tick.Stop()
	for {
		all := false
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			all = true
		case <-changes.C:
			select {
			case <-ctx.Done():
				return
			case <-time.After(f.coalesce):
			}
		}
		batch := changes.Take()
		if changes.Overflowed() || len(batch) > dashboardFeedBatch {
			all = true
		}
		var touched []string
		if !all {
			if len(batch) == 0 {
				continue
			}
			ids := make([]string, len(batch))
			for i, c := range batch {
				ids[i] = c.TaskID
			}
			var err error
			if touched, err = f.teamsOf(ctx, ids); err != nil {
				if ctx.Err() != nil {
					return
				}
				f.logger.Warn("Dashboard feed could not look up changed tasks; rendering every dashboard", "error", err)
				all = true
			}
		}
		for _, g := range f.due(all, touched) {
			if !f.renderTo(ctx, g) {
				return
			}
		}
	}
}

// renderTo renders g's section once and sends it to g's sockets; it
// reports false once the loop has been stopped (nobody may get anything
// after their stop func returned).
func (f *dashboardFeed) renderTo(ctx context.Context, g *dashboardGroup) bool {
	lctx, cancel := context.WithTimeout(ctx, dashboardLoadTimeout)
	b, err := f.render(lctx, g.teams)
	cancel()
	f.renders.Inc()
	if err != nil {
		if ctx.Err() != nil {
			return false
		}
		f.logger.Warn("Dashboard feed could not render a dashboard", "error", err)
		return true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	cur := f.groups[g.key] // the set's sockets now, whoever came or went meanwhile
	if cur == nil {
		return true
	}
	for s := range cur.subs {
		if !s.deliver(b) {
			f.remove(s)
		}
	}
	return true
}
