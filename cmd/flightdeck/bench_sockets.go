package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// socketBenchResult is the JSON line of `flightdeck bench sockets`.
type socketBenchResult struct {
	Sockets       int     `json:"sockets"`
	RSSBeforeMB   float64 `json:"server_rss_before_mb"`
	RSSAfterMB    float64 `json:"server_rss_after_mb"`
	KBPerSocket   float64 `json:"server_kb_per_socket"`
	DialSeconds   float64 `json:"dial_seconds"`
	LatencyTasks  int     `json:"latency_tasks"`
	LatencyEvents int     `json:"latency_events"`
	LatencyP50    float64 `json:"event_latency_p50_ms"`
	LatencyP99    float64 `json:"event_latency_p99_ms"`
	LatencyMax    float64 `json:"event_latency_max_ms"`
}

// runBenchSockets: `flightdeck bench sockets` against a running server
// (FLIGHTDECK_URL, FLIGHTDECK_TOKEN). It holds N sockets open, each
// subscribed to a finished task and otherwise idle, and reads the server's
// resident memory from its /metrics (--metrics-url when the sockets' server
// is not the one to weigh) before and after; then, with the sockets still
// open, it submits noop tasks at --rate and measures each live event's
// latency from its time (the worker's transaction, on the database clock)
// to its arrival here. Run the server with FLIGHTDECK_WS_RATE raised: every
// subscribe counts against the user's message rate.
func runBenchSockets(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("bench sockets", env.stderr)
	n := fs.Int("sockets", 10000, "idle sockets to hold open")
	tasks := fs.Int("tasks", 200, "noop tasks for the latency phase")
	rate := fs.Float64("rate", 20, "task submissions per second in the latency phase")
	metricsURL := fs.String("metrics-url", "", "Prometheus endpoint of the process to weigh (default: FLIGHTDECK_URL/metrics)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 0 || *tasks < 1 || *rate <= 0 {
		return fmt.Errorf("%w: --sockets must be ≥ 0, --tasks and --rate positive", errUsage)
	}
	client, err := newAPIClient(env)
	if err != nil {
		return err
	}
	if *metricsURL == "" {
		*metricsURL = client.base + "/metrics"
	}
	var idle struct {
		ID string `json:"id"`
	}
	if _, err := client.do(ctx, http.MethodPost, "/api/v1/tasks", map[string]any{"kind": "deploy", "pipeline": "noop"}, nil, &idle); err != nil {
		return err
	}
	res := socketBenchResult{Sockets: *n, LatencyTasks: *tasks}
	before, err := residentMB(ctx, *metricsURL)
	if err != nil {
		return err
	}
	res.RSSBeforeMB = before

	// Idle sockets, dialled 50 at a time.
	start := time.Now()
	conns := make([]*websocket.Conn, *n)
	var dialErr atomic.Value
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= *n || dialErr.Load() != nil {
					return
				}
				c, err := benchSubscribe(ctx, client, idle.ID)
				if err != nil {
					dialErr.Store(fmt.Errorf("socket %d: %w", i, err))
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.CloseNow()
			}
		}
	}()
	if err, ok := dialErr.Load().(error); ok {
		return err
	}
	res.DialSeconds = round(time.Since(start).Seconds(), 2)
	// Settle: the replayed events are read by the keepers below.
	for _, c := range conns {
		go func() {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					return
				}
			}
		}()
	}
	after, err := residentMB(ctx, *metricsURL)
	if err != nil {
		return err
	}
	res.RSSAfterMB = after
	if *n > 0 {
		res.KBPerSocket = round((after-before)*1024/float64(*n), 1)
	}

	lat, err := benchEventLatency(ctx, client, *tasks, *rate)
	if err != nil {
		return err
	}
	res.LatencyEvents = len(lat)
	if len(lat) > 0 {
		slices.Sort(lat)
		res.LatencyP50, res.LatencyP99, res.LatencyMax = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	out, _ := json.Marshal(res)
	fmt.Fprintln(env.stdout, string(out))
	return nil
}

// benchSubscribe opens a socket and subscribes it to a task, returning once
// the subscription is acknowledged.
func benchSubscribe(ctx context.Context, client *apiClient, taskID string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(dctx, client.wsURL(), &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + client.token}}})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(4 << 20)
	sub, _ := json.Marshal(map[string]any{"type": "subscribe", "task_id": taskID, "after_seq": 0, "id": "s"})
	if err := c.Write(dctx, websocket.MessageText, sub); err != nil {
		c.CloseNow()
		return nil, err
	}
	for {
		_, b, err := c.Read(dctx)
		if err != nil {
			c.CloseNow()
			return nil, err
		}
		var m struct{ Type, ID, Code, Message string }
		if json.Unmarshal(b, &m) == nil && m.ID == "s" {
			if m.Type == "error" {
				c.CloseNow()
				return nil, fmt.Errorf("subscribe refused: %s (%s)", m.Message, m.Code)
			}
			return c, nil
		}
	}
}

// benchEventLatency submits noop tasks at rate and follows each on its own
// socket until it ends, returning the latency in ms of every event that was
// written after its subscription was acknowledged (earlier ones arrive as
// replay and say nothing about latency).
func benchEventLatency(ctx context.Context, client *apiClient, tasks int, rate float64) ([]float64, error) {
	var mu sync.Mutex
	var lat []float64
	var wg sync.WaitGroup
	errc := make(chan error, tasks)
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for range tasks {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		var t struct {
			ID string `json:"id"`
		}
		if _, err := client.do(ctx, http.MethodPost, "/api/v1/tasks", map[string]any{"kind": "deploy", "pipeline": "noop"}, nil, &t); err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := benchSubscribe(ctx, client, t.ID)
			if err != nil {
				errc <- err
				return
			}
			defer c.CloseNow()
			acked := time.Now()
			rctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			for {
				_, b, err := c.Read(rctx)
				if err != nil {
					errc <- fmt.Errorf("task %s: %w", t.ID, err)
					return
				}
				got := time.Now()
				var m struct {
					Type  string `json:"type"`
					Event struct {
						Type string    `json:"type"`
						Time time.Time `json:"time"`
					} `json:"event"`
				}
				if json.Unmarshal(b, &m) != nil || m.Type != "event" {
					continue
				}
				if m.Event.Time.After(acked) {
					mu.Lock()
					lat = append(lat, float64(got.Sub(m.Event.Time).Microseconds())/1000)
					mu.Unlock()
				}
				switch m.Event.Type {
				case "task.completed", "task.failed", "task.cancelled":
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := <-errc; err != nil {
		return nil, err
	}
	return lat, nil
}

// residentMB reads process_resident_memory_bytes from a Prometheus endpoint.
func residentMB(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("error reading %s: %w", url, err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_resident_memory_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return 0, fmt.Errorf("error reading %s: %w", url, err)
			}
			return f / (1 << 20), nil
		}
	}
	return 0, fmt.Errorf("%s has no process_resident_memory_bytes", url)
}
