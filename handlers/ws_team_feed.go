package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"flightdeck/internal/metrics"
	"flightdeck/internal/notify"
	"flightdeck/store"
	"flightdeck/views/pages"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// Team feed tuning: the ids loaded by one query, and the pause after a
// failed load before the changes are tried again.
const (
	teamFeedBatch = 500
	teamFeedRetry = time.Second
)

// teamFeed loads each changed task once per process and hands it to every
// socket watching the task's team (the API's topic "team" and the task
// list's socket), so a change costs one query per batch of changes rather
// than one per socket. A socket only ever gets tasks of the teams it
// subscribed with: the same check TaskGet makes, done on the loaded row.
//
// Its loop runs while anybody subscribes. Deliveries run on that loop,
// under mu, one change at a time: a deliver func must not block
// (wsConn.send does not: a full send buffer closes the socket).
type teamFeed struct {
	store     *store.Store
	pipelines *pipeline.Catalog // for the rows' targets and versions
	hub       *notify.Hub
	logger    *slog.Logger
	loads     *metrics.Counter

	mu     sync.Mutex
	byTeam map[string]map[*teamSub]struct{}
	subs   int
	stop   context.CancelFunc // of the running loop; nil when none runs
}

type teamSub struct {
	teams   []string
	deliver func(*taskChange) bool // false: the socket is gone, drop the subscription
	removed bool
}

// taskChange is one loaded change, shared read-only by all its receivers:
// the API frame is marshalled once, the list row rendered at most once.
type taskChange struct {
	task      *task.Task
	frame     []byte            // {"type":"task","task":…}
	pipelines *pipeline.Catalog // for the row
	skipped   int               // a completed task's skipped steps, for its row's words

	rowOnce sync.Once
	row     []byte
}

func (c *taskChange) rowHTML() []byte {
	c.rowOnce.Do(func() {
		var buf bytes.Buffer
		r := taskRow(c.pipelines, c.task, time.Now())
		r.Skipped = c.skipped
		_ = pages.TaskListRow(r).Render(context.Background(), &buf)
		c.row = buf.Bytes()
	})
	return c.row
}

func newTeamFeed(st *store.Store, cat *pipeline.Catalog, hub *notify.Hub, logger *slog.Logger, reg *metrics.Registry) *teamFeed {
	loads := metrics.Registered(reg, metrics.NewCounter("flightdeck_ws_team_feed_loads_total",
		"Queries the team feed made to load changed tasks (one per batch of changes, however many sockets watch)."))
	return &teamFeed{store: st, pipelines: cat, hub: hub, logger: logger, loads: loads, byTeam: map[string]map[*teamSub]struct{}{}}
}

// subscribe delivers the changes of teamIDs' tasks until the returned func
// is called or deliver returns false. started, if set, runs once the
// subscription is in place and before any delivery (the ack of a
// subscribe message goes out there, so it precedes the first task).
func (f *teamFeed) subscribe(teamIDs []string, deliver func(*taskChange) bool, started func()) (stop func()) {
	s := &teamSub{teams: slices.Compact(slices.Sorted(slices.Values(teamIDs))), deliver: deliver}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range s.teams {
		m := f.byTeam[id]
		if m == nil {
			m = map[*teamSub]struct{}{}
			f.byTeam[id] = m
		}
		m[s] = struct{}{}
	}
	f.subs++
	if f.stop == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f.stop = cancel
		go f.run(ctx, f.hub.SubscribeChanges())
	}
	if started != nil {
		started()
	}
	return func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.remove(s)
	}
}

// remove drops s (once); the last one out stops the loop. Callers hold mu.
func (f *teamFeed) remove(s *teamSub) {
	if s.removed {
		return
	}
	s.removed = true
	for _, id := range s.teams {
		delete(f.byTeam[id], s)
		if len(f.byTeam[id]) == 0 {
			delete(f.byTeam, id)
		}
	}
	f.subs--
	if f.subs == 0 {
		f.stop()
		f.stop = nil
	}
}

// teams returns the teams somebody watches: a load asks only for those.
func (f *teamFeed) teams() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.byTeam))
	for id := range f.byTeam {
		out = append(out, id)
	}
	return out
}

// run takes the changed task ids in batches, loads each batch with one
// query and fans every task out. sent remembers the last seq handed out
// per task, so a repeated or stale notification costs neither a load nor a
// duplicate frame.
func (f *teamFeed) run(ctx context.Context, changes *notify.Changes) {
	defer changes.Close()
	sent := map[string]int{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-changes.C:
		}
		if changes.Overflowed() {
			f.logger.Warn("Team feed fell behind; some task changes were not sent")
		}
		batch := changes.Take()
		batch = slices.DeleteFunc(batch, func(c notify.Change) bool { return c.Seq > 0 && c.Seq <= sent[c.TaskID] })
		for len(batch) > 0 {
			n := min(len(batch), teamFeedBatch)
			ids := make([]string, n)
			for i, c := range batch[:n] {
				ids[i] = c.TaskID
			}
			tasks, err := f.store.TaskGetMany(ctx, f.teams(), ids)
			f.loads.Inc()
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				f.logger.Warn("Team feed could not load changed tasks; retrying", "error", err)
				changes.Requeue(batch)
				select {
				case <-ctx.Done():
					return
				case <-time.After(teamFeedRetry):
				}
				break
			}
			batch = batch[n:]
			// Only a batch with a completed task reads its skipped steps
			// (its row says "completed with 1 step skipped"); a failed read
			// shows plain "completed" rather than hold the change back.
			skipped, err := skippedSteps(ctx, f.store, tasks)
			if err != nil && ctx.Err() == nil {
				f.logger.Warn("Team feed could not count skipped steps", "error", err)
			}
			if !f.fanOut(ctx, tasks, skipped, sent) {
				return
			}
		}
		if len(sent) > 10000 {
			clear(sent) // at worst one repeated frame per task
		}
	}
}

// fanOut hands each task with something new to its team's subscribers; it
// reports false once the loop has been stopped (nobody may get anything
// after their stop func returned).
func (f *teamFeed) fanOut(ctx context.Context, tasks []*task.Task, skipped map[string]int, sent map[string]int) bool {
	for _, t := range tasks {
		if t.LastSeq <= sent[t.ID] {
			continue
		}
		sent[t.ID] = t.LastSeq
		frame, err := json.Marshal(wsOut{Type: "task", Task: t})
		if err != nil {
			f.logger.Error("Team feed could not encode a task", "task_id", t.ID, "error", err)
			continue
		}
		c := &taskChange{task: t, frame: frame, pipelines: f.pipelines, skipped: skipped[t.ID]}
		f.mu.Lock()
		if ctx.Err() != nil {
			f.mu.Unlock()
			return false
		}
		for s := range f.byTeam[t.TeamID] {
			if !s.deliver(c) {
				f.remove(s)
			}
		}
		f.mu.Unlock()
	}
	return true
}
