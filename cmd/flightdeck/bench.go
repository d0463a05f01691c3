package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"flightdeck/internal/notify"
	"fmt"
	"os"
	"runtime/pprof"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/store"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/rollup"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

type benchResult struct {
	Tasks            int     `json:"tasks"`
	Workers          int     `json:"workers"`
	Steps            int     `json:"steps"`
	Seconds          float64 `json:"seconds"`
	TasksPerSecond   float64 `json:"tasks_per_second"`
	LatencyRate      float64 `json:"latency_rate"`
	InsertToClaimP50 float64 `json:"insert_to_claim_p50_ms"`
	InsertToClaimP99 float64 `json:"insert_to_claim_p99_ms"`
	InsertToDoneP99  float64 `json:"insert_to_done_p99_ms"`
	LatencyTasks     int     `json:"latency_tasks"`
	LatencySeconds   float64 `json:"latency_seconds"`
	// LatencyWarmupSeconds precede the measured latency phase, at its rate.
	LatencyWarmupSeconds float64 `json:"latency_warmup_seconds"`
	// LatencyRemoteSubmit: the submits woke the workers by NOTIFY only.
	LatencyRemoteSubmit bool    `json:"latency_remote_submit"`
	ClaimBatch          int     `json:"claim_batch"`
	Pipeline            string  `json:"pipeline"`
	InsertSeconds       float64 `json:"insert_seconds"`
	EventsPerTask       float64 `json:"events_per_task"`
	// The reference, measured on the same cluster in the same run: pgbench
	// one-row UPDATE transactions per second at 16 clients (0: not run).
	// PgbenchTPS is the mean of pgbench's runs right before and right
	// after the burn-down.
	PgbenchTPS    float64 `json:"pgbench_tps,omitempty"`
	PgbenchBefore float64 `json:"pgbench_tps_before,omitempty"`
	PgbenchAfter  float64 `json:"pgbench_tps_after,omitempty"`
	VsPgbench     float64 `json:"vs_pgbench,omitempty"`
	// Work per unit, which a drifting machine moves less than rates (see
	// cpuBusy): the machine's busy CPU µs per task of the burn-down and per
	// pgbench transaction (the mean of both runs), and the second over the
	// first: how many tasks the queue works in the CPU time pgbench spends
	// on one transaction.
	CPUPerTask float64 `json:"cpu_us_per_task,omitempty"`
	// ProcCPUPerTask is the CPU µs per task of the burn-down counted by
	// process (procCPU: this process, plus the database server's processes
	// when they are readable here, as ProcCPUWhat says): unlike
	// cpu_us_per_task, other work on the machine does not move it.
	ProcCPUPerTask float64 `json:"proc_cpu_us_per_task,omitempty"`
	ProcCPUWhat    string  `json:"proc_cpu_what,omitempty"`
	// FinalWindow*: from a handler's return (its slot freed) to its
	// outcome's commit in the burn-down, the window in which a crash
	// re-runs the task's last step (under its key).
	FinalWindowP50  float64 `json:"final_write_window_p50_ms"`
	FinalWindowP99  float64 `json:"final_write_window_p99_ms"`
	PgbenchCPUPerTx float64 `json:"pgbench_cpu_us_per_tx,omitempty"`
	VsPgbenchCPU    float64 `json:"vs_pgbench_cpu,omitempty"`
}

// runBench: `flightdeck bench queue`. It works on a fresh database so it
// never touches real data, and drops it afterwards.
func runBench(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) > 0 && args[0] == "sockets" {
		return runBenchSockets(ctx, env, args[1:])
	}
	if len(args) > 0 && args[0] == "pages" {
		return runBenchPages(ctx, env, args[1:])
	}
	if len(args) == 0 || args[0] != "queue" {
		return fmt.Errorf("%w: usage: flightdeck bench queue [--tasks N] [--workers W] [--steps K] [--rate R] [--database-url U]\n"+
			"       flightdeck bench pages [--tasks N] [--repeats R] [--database-url U]\n"+
			"       flightdeck bench sockets [--sockets N] [--tasks T] [--rate R] [--metrics-url U]  (FLIGHTDECK_URL, FLIGHTDECK_TOKEN)", errUsage)
	}
	cfg, err := config.Load(env.getenv)
	if err != nil {
		return err
	}
	fs := newFlagSet("bench queue", env.stderr)
	tasks := fs.Int("tasks", 100000, "tasks for the burn-down phase")
	workers := fs.Int("workers", 100, "worker slots")
	rate := fs.Float64("rate", 500, "inserts per second in the latency phase")
	latencyFor := fs.Duration("latency-duration", 10*time.Second, "length of the latency phase")
	steps := fs.Int("steps", 1, "steps of the do-nothing action noop per task (1: the built-in noop pipeline)")
	remote := fs.Bool("remote-submit", false, "in the latency phase, submit as another process would: workers learn of tasks by NOTIFY only (default: as serve --role all, woken in-process)")
	pgbenchFor := fs.Duration("pgbench", 20*time.Second, "also measure pgbench one-row UPDATEs at 16 clients this long, right before and right after the burn-down (0: skip)")
	fs.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "server to benchmark on (default: DATABASE_URL or the embedded one)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if *tasks < 1 || *workers < 1 || *rate <= 0 || *steps < 1 || *steps > 100 {
		return fmt.Errorf("%w: --tasks, --workers and --rate must be positive, --steps between 1 and 100", errUsage)
	}
	stopTracing, err := startTracing(ctx, env)
	if err != nil {
		return err
	}
	defer stopTracing()
	server, err := benchServerURL(ctx, env, cfg)
	if err != nil {
		return err
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "fd_bench_" + hex.EncodeToString(b)
	dbURL, drop, err := benchDatabase(ctx, env, server, name)
	if err != nil {
		return err
	}
	defer drop()
	// pgbench's reference: set up now, measured right before and right
	// after the burn-down (measurePgbench).
	var pg *pgbenchRef
	if *pgbenchFor > 0 {
		pgName := name + "_pgbench"
		pgURL, drop, err := benchDatabase(ctx, env, server, pgName)
		if err != nil {
			return err
		}
		defer drop()
		env.logger.Info("Setting up pgbench", "database", pgName)
		if pg, err = newPgbench(ctx, pgURL); err != nil {
			return err
		}
		defer pg.close()
	}
	var pgbenchTPS, pgbenchCPU []float64
	measurePgbench := func() error {
		if pg == nil {
			return nil
		}
		env.logger.Info("Measuring pgbench one-row UPDATEs, 16 clients", "seconds", pgbenchFor.Seconds())
		tps, cpu, err := pg.run(ctx, *pgbenchFor)
		if err != nil {
			return err
		}
		env.logger.Info("pgbench done", "tps", round(tps, 1), "cpu_us_per_tx", round(cpu, 1))
		pgbenchTPS, pgbenchCPU = append(pgbenchTPS, tps), append(pgbenchCPU, cpu)
		return nil
	}
	pool, err := store.Open(ctx, dbURL, int32(min(*workers+10, 60)))
	if err != nil {
		return err
	}
	st := store.New(pool)
	defer st.Close()
	if err := st.Migrate(ctx, nil); err != nil {
		return err
	}
	userID, err := st.UserAdd(ctx, store.UserAddParams{Email: "bench@bench.local", Team: "bench", Role: auth.RoleDeployer})
	if err != nil {
		return err
	}
	teamID, err := st.TeamIDByName(ctx, "bench")
	if err != nil {
		return err
	}
	pipelines, pipelineName := pipeline.Builtin(), "noop"
	if *steps > 1 {
		// K steps of noop: a pipeline of this benchmark's own, run like any other.
		pipelineName = fmt.Sprintf("noop-%d", *steps)
		p := &pipeline.Pipeline{Name: pipelineName, Description: "benchmark: steps of the do-nothing action"}
		for i := range *steps {
			p.Steps = append(p.Steps, pipeline.Step{Name: fmt.Sprintf("noop%d", i+1), Action: "noop"})
		}
		pipelines = append(pipelines, p)
	}
	catalog, err := pipeline.NewCatalog(pipelines...)
	if err != nil {
		return err
	}
	// Each task is stored as every submit stores a deploy: with its step
	// rows and their idempotency keys (saga.NewDeploy).
	benchPipeline, _ := catalog.Get(pipelineName)
	benchParams, ferr := benchPipeline.Validate(json.RawMessage(`{}`))
	if ferr != nil {
		return fmt.Errorf("benchmark pipeline %s: %v", pipelineName, ferr)
	}
	stepsOf := func(id string) []store.StepSave {
		steps, _ := saga.PlannedSteps(benchPipeline, benchParams, id, "bench")
		return steps
	}

	if path := env.getenv("FLIGHTDECK_CPUPROFILE"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if path := env.getenv("FLIGHTDECK_MEMPROFILE"); path != "" {
		// Written when the run ends (the burn-down's allocations dominate
		// it): alloc_space shows where they came from.
		defer func() {
			if f, err := os.Create(path); err == nil {
				_ = pprof.Lookup("allocs").WriteTo(f, 0)
				_ = f.Close()
			}
		}()
	}

	// Phase 1: burn-down.
	env.logger.Info("Inserting tasks", "tasks", *tasks, "database", name)
	insertStart := time.Now()
	lastLog := insertStart
	for left := *tasks; left > 0; {
		n := min(left, 10000)
		if err := st.TaskInsertMany(ctx, teamID, userID, task.KindDeploy, pipelineName, n, stepsOf); err != nil {
			return err
		}
		left -= n
		if time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			env.logger.Info("Inserting", "inserted", *tasks-left, "of", *tasks)
		}
	}
	insertSeconds := time.Since(insertStart).Seconds()
	// Every measured phase (pgbench's runs too) starts after a checkpoint,
	// so none pays for the writes of its set-up; the inserted tasks are
	// vacuumed first, as pgbench -i vacuums its tables, so autovacuum does
	// not settle the set-up's rows in the middle of the burn-down.
	if err := store.VacuumAnalyze(ctx, dbURL); err != nil {
		env.logger.Warn("Could not vacuum before the burn-down; figures may vary more", "error", err)
	}
	if err := measurePgbench(); err != nil {
		return err
	}
	if err := store.Checkpoint(ctx, dbURL); err != nil {
		env.logger.Warn("Could not checkpoint before the burn-down; figures may vary more", "error", err)
	}
	var done atomic.Int64
	allDone := make(chan struct{})
	var closeOnce sync.Once
	target := int64(*tasks)
	var windowMu sync.Mutex
	windows := make([]time.Duration, 0, *tasks)
	onFinish := func(_ *task.Task, _ task.State, window time.Duration) {
		windowMu.Lock()
		windows = append(windows, window)
		windowMu.Unlock()
		if done.Add(1) == target {
			closeOnce.Do(func() { close(allDone) })
		}
	}
	qcfg := queue.Config{Workers: *workers, Lease: cfg.Lease, PollInterval: cfg.PollInterval, OnFinish: onFinish, Logger: env.logger}
	p := queue.New(st, taskHandlers(cfg, st, catalog, nil, nil), qcfg)
	poolCtx, stopPool := context.WithCancel(ctx)
	var poolWG sync.WaitGroup
	defer func() { stopPool(); poolWG.Wait() }()
	// The server's processes count when they are on this machine and
	// readable (the side-by-side cluster); otherwise this process alone.
	serverPID, _ := store.ServerPID(ctx, pool)
	start, cpu, proc := time.Now(), startCPU(), startProcCPU(serverPID)
	poolWG.Go(func() { _ = p.Run(poolCtx) })
	// the dashboard's fold runs as in serve: its work is the queue's too
	poolWG.Go(func() { _ = rollup.NewFolder(st, rollup.FoldConfig{Interval: cfg.RollupInterval}).Run(poolCtx) })
	if err := benchWait(ctx, env, allDone, &done, *tasks); err != nil {
		return err
	}
	elapsed, cpuPerTask := time.Since(start).Seconds(), cpu.perOp(int64(*tasks))
	windowMu.Lock()
	windowP50, windowP99 := percentileMS(windows, 0.50), percentileMS(windows, 0.99)
	windowMu.Unlock()
	procPerTask, procWhat := round(proc.perOp(int64(*tasks)), 1), "flightdeck alone"
	if serverPID > 0 {
		procWhat = "flightdeck and its database server"
	}
	var events int64
	if err := pool.QueryRow(ctx, `SELECT COALESCE(sum(last_seq - first_seq + 1), 0) FROM task_event_batches`).Scan(&events); err != nil {
		return err
	}
	env.logger.Info("Burn-down done", "seconds", elapsed, "tasks_per_second", float64(*tasks)/elapsed)

	// Phase 2: latency with idle workers, inserts at a steady rate. It
	// starts on a settled database like the burn-down: vacuumed and after
	// a checkpoint. Otherwise autovacuum of the burned-down tasks and the
	// checkpoint writing out the dirty shared buffers run during it and
	// stall its commit flushes (p50 6 ms, p99 about 100 ms on a durable
	// cluster after a million tasks, against 1–3 ms and 12–15 ms settled).
	if err := store.VacuumAnalyze(ctx, dbURL); err != nil {
		env.logger.Warn("Could not vacuum before the latency phase; figures may vary more", "error", err)
	}
	if err := measurePgbench(); err != nil {
		return err
	}
	if err := store.Checkpoint(ctx, dbURL); err != nil {
		env.logger.Warn("Could not checkpoint before the latency phase; figures may vary more", "error", err)
	}
	cfg.DatabaseURL = dbURL
	web, err := requestStore(ctx, cfg, st)
	if err != nil {
		return err
	}
	defer web.Close()
	res, err := benchLatency(ctx, env, st, p, teamID, userID, benchPipeline, benchParams, *rate, *latencyFor, *remote, web)
	if err != nil {
		return err
	}
	res.Tasks, res.Workers, res.Steps, res.Pipeline, res.Seconds = *tasks, *workers, *steps, pipelineName, round(elapsed, 3)
	res.ProcCPUPerTask, res.ProcCPUWhat = procPerTask, procWhat
	res.FinalWindowP50, res.FinalWindowP99 = windowP50, windowP99
	res.TasksPerSecond = round(float64(*tasks)/elapsed, 1)
	res.ClaimBatch = p.ClaimBatch()
	res.InsertSeconds = round(insertSeconds, 3)
	res.EventsPerTask = round(float64(events)/float64(*tasks), 2)
	if len(pgbenchTPS) == 2 {
		mean := (pgbenchTPS[0] + pgbenchTPS[1]) / 2
		res.PgbenchTPS, res.PgbenchBefore, res.PgbenchAfter = round(mean, 1), round(pgbenchTPS[0], 1), round(pgbenchTPS[1], 1)
		res.VsPgbench = round(res.TasksPerSecond/mean, 2)
		if cpuPerTask > 0 && pgbenchCPU[0] > 0 && pgbenchCPU[1] > 0 {
			perTx := (pgbenchCPU[0] + pgbenchCPU[1]) / 2
			res.CPUPerTask, res.PgbenchCPUPerTx = round(cpuPerTask, 1), round(perTx, 1)
			res.VsPgbenchCPU = round(perTx/cpuPerTask, 2)
		}
	} else if cpuPerTask > 0 {
		res.CPUPerTask = round(cpuPerTask, 1)
	}
	out, _ := json.Marshal(res)
	fmt.Fprintln(env.stdout, string(out))
	return nil
}

// benchDatabase creates a fresh database name on server; drop removes it
// (it outlives ctx, so an interrupted run cleans up too).
func benchDatabase(ctx context.Context, env *cliEnv, server, name string) (url string, drop func(), err error) {
	if url, err = store.RecreateDatabase(ctx, server, name); err != nil {
		return "", nil, err
	}
	return url, func() {
		dropCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := store.DropDatabase(dropCtx, server, name); err != nil {
			env.logger.Warn("Could not drop a benchmark database", "database", name, "error", err)
		}
	}, nil
}

// benchWait waits for the burn-down, saying how far it is every 5 seconds.
func benchWait(ctx context.Context, env *cliEnv, allDone <-chan struct{}, done *atomic.Int64, total int) error {
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	last, lastAt := int64(0), time.Now()
	for {
		select {
		case <-allDone:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case now := <-tick.C:
			n := done.Load()
			env.logger.Info("Burning down", "done", n, "of", total, "tasks_per_second", round(float64(n-last)/now.Sub(lastAt).Seconds(), 1))
			last, lastAt = n, now
		}
	}
}

func benchLatency(ctx context.Context, env *cliEnv, st *store.Store, p *queue.Pool, teamID, userID string, pl *pipeline.Pipeline, params map[string]any, rate float64, dur time.Duration, remote bool, web *store.Store) (benchResult, error) {
	// The pool is already running; attach a listener so NOTIFY wakes it.
	n := notify.NewListener(st, env.logger)
	p.Attach(n)
	nctx, stop := context.WithCancel(ctx)
	defer stop()
	go n.Run(nctx) //nolint:errcheck
	// A warm-up second at the same rate is not measured: its submits open
	// the connections and prepare the statements the steady state reuses
	// (its p99 was 80–130 ms against 10–20 ms in every later second).
	// Submits go through the web requests' store (requestStore), as an
	// API submit does: the same plan choices and statement bound, not the
	// workers' pool and its generic plans.
	sub := web
	if remote {
		// A store of its own wakes no pool in this process (its own notify.Bus).
		sub = store.New(web.Pool())
	}
	if _, err := benchSubmit(ctx, env, sub, teamID, userID, pl, params, rate, latencyWarmup); err != nil {
		return benchResult{}, err
	}
	ids, err := benchSubmit(ctx, env, sub, teamID, userID, pl, params, rate, dur)
	if err != nil {
		return benchResult{}, err
	}
	lat, err := st.TaskLatency(ctx, ids)
	if err != nil {
		return benchResult{}, err
	}
	return benchResult{LatencyRate: rate, LatencyTasks: len(ids), LatencySeconds: dur.Seconds(), LatencyWarmupSeconds: latencyWarmup.Seconds(), LatencyRemoteSubmit: remote,
		InsertToClaimP50: round(lat.ClaimP50, 3), InsertToClaimP99: round(lat.ClaimP99, 3), InsertToDoneP99: round(lat.DoneP99, 3)}, nil
}

// latencyWarmup is the unmeasured start of the latency phase.
const latencyWarmup = time.Second

// benchSubmit submits noop tasks at rate per second for dur, each on its own
// goroutine as concurrent clients would, and waits (at most 30 s) for them
// to end; it returns their ids.
func benchSubmit(ctx context.Context, env *cliEnv, st *store.Store, teamID, userID string, pl *pipeline.Pipeline, params map[string]any, rate float64, dur time.Duration) ([]string, error) {
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	start := time.Now()
	var ids []string
	var mu sync.Mutex
	var wg sync.WaitGroup
	// A busy machine drops ticks; each tick submits what is due by then,
	// so the rate holds.
	for sent, total := 0, int(dur.Seconds()*rate); sent < total; {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		due := min(total, int(time.Since(start).Seconds()*rate)+1)
		for ; sent < due; sent++ {
			wg.Go(func() {
				in := store.TaskInsertParams{TeamID: teamID, CreatedByID: userID, Priority: task.PriorityNormal}
				t, _, err := saga.Submit(ctx, st, saga.Submission{Insert: in, Pipeline: pl, Params: params, Team: "bench"})
				if err != nil {
					env.logger.Warn("Insert failed", "error", err)
					return
				}
				mu.Lock()
				ids = append(ids, t.ID)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	waitUntil := time.Now().Add(30 * time.Second)
	for time.Now().Before(waitUntil) {
		left, err := st.TaskCountUnfinished(ctx, ids)
		if err != nil {
			return nil, err
		}
		if left == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond) // a benchmark's own wait, not a test synchronisation
	}
	return ids, nil
}

func round(f float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(f*p+0.5)) / p
}

// percentileMS is the q-quantile of ds in milliseconds (0 for none).
func percentileMS(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return round(float64(s[int(q*float64(len(s)-1))])/float64(time.Millisecond), 3)
}
