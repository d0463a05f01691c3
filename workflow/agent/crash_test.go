package agent_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flightdeck/internal/notify"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/llmtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/agent"
	"flightdeck/workflow/artifact"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/task"
)

// The test binary doubles as a worker process: with envChildDB set,
// TestMain runs a worker pool (agent tasks only) until it is killed.
const (
	envChildDB     = "FD_AGENT_CHILD_DB"
	envChildLLM    = "FD_AGENT_CHILD_LLM"
	envChildLedger = "FD_AGENT_CHILD_LEDGER"
	envChildBlock  = "FD_AGENT_CHILD_BLOCK" // the probe with this x blocks for good (and says so on stdout)
)

func TestMain(m *testing.M) {
	if url := os.Getenv(envChildDB); url != "" {
		runChild(url)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// ledgerProbe is the children's read-only tool. Every run appends a line
// "pid x call-key" to the ledger file, so the parent counts runs across
// processes; its output names the process that ran it, so the parent can
// tell a persisted result from a re-run.
func ledgerProbe(ledger, block string) *agent.Tool {
	return &agent.Tool{Name: "probe", Description: "test tool that records each run",
		Params: []agent.Param{{Name: "x", Type: "string", Description: "a label", Required: true, Max: 50}},
		Run: func(ctx context.Context, e *agent.Env, args map[string]any) (string, error) {
			x := args["x"].(string)
			f, err := os.OpenFile(ledger, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
			if err != nil {
				return "", err
			}
			_, err = fmt.Fprintf(f, "%d %s %s\n", os.Getpid(), x, e.CallKey)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return "", err
			}
			if block != "" && x == block {
				fmt.Printf("blocked %s\n", x)
				<-ctx.Done() // never returns a result: the process is killed here
				return "", ctx.Err()
			}
			return fmt.Sprintf(`{"probe":%q,"pid":%d}`, x, os.Getpid()), nil
		}}
}

// runChild is a worker process with a short lease that works until it is
// killed.
func runChild(url string) {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	st := store.New(pool)
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := agent.NewRunner(agent.Config{
		Client:    agent.NewOpenAI(agent.OpenAIConfig{BaseURL: os.Getenv(envChildLLM), Model: "fake"}),
		Retry:     agent.RetryConfig{Attempts: 3, BackoffBase: time.Millisecond, BackoffMax: 5 * time.Millisecond, RequestTimeout: time.Minute},
		Artifacts: artifact.New(st, 0),
		Store:     st,
		Tools:     []*agent.Tool{ledgerProbe(os.Getenv(envChildLedger), os.Getenv(envChildBlock))},
		Logger:    logger,
	})
	n := notify.NewListener(st, nil)
	p := queue.New(st, map[task.Kind]queue.Handler{task.KindAgent: runner}, queue.Config{
		Workers: 2, Lease: time.Second, PollInterval: 20 * time.Millisecond, RescueInterval: 100 * time.Millisecond, Logger: logger})
	p.Attach(n)
	go n.Run(ctx) //nolint:errcheck
	fmt.Println("ready")
	_ = p.Run(ctx)
}

// crashBundle is one crash test's database, fake model and ledger.
type crashBundle struct {
	url    string
	st     *store.Store
	llm    *llmtest.Server
	user   *auth.User
	ledger string
}

func setupCrash(t *testing.T) *crashBundle {
	t.Helper()
	url := dbtest.URL(t)
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	st := store.New(pool)
	return &crashBundle{url: url, st: st, llm: llmtest.New(t),
		user:   testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer),
		ledger: filepath.Join(t.TempDir(), "ledger")}
}

// worker is a child worker process and its stdout lines.
type worker struct {
	cmd    *exec.Cmd
	lines  chan string
	exited chan struct{}
}

// startWorker starts a child worker and waits until it says it is ready.
func (b *crashBundle) startWorker(t *testing.T, block string) *worker {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChildDB+"="+b.url, envChildLLM+"="+b.llm.URL, envChildLedger+"="+b.ledger, envChildBlock+"="+block)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	w := &worker{cmd: cmd, lines: make(chan string, 16), exited: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		_ = cmd.Wait()
		close(w.exited)
	}()
	t.Cleanup(w.kill)
	w.expect(t, "ready")
	return w
}

// expect waits for the line want on the worker's stdout.
func (w *worker) expect(t *testing.T, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		select {
		case l := <-w.lines:
			if l == want {
				return
			}
		case <-w.exited:
			t.Fatalf("the worker exited before saying %q", want)
		case <-ctx.Done():
			t.Fatalf("the worker never said %q", want)
		}
	}
}

// kill SIGKILLs the worker and waits until it is gone.
func (w *worker) kill() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.exited
}

func (b *crashBundle) submit(t *testing.T) *task.Task {
	t.Helper()
	tk, _, err := b.st.TaskInsert(t.Context(), store.TaskInsertParams{TeamID: b.user.Memberships[0].TeamID, CreatedByID: b.user.ID,
		Kind: task.KindAgent, Prompt: "probe things", Priority: task.PriorityNormal, MaxAttempts: 5})
	require.NoError(t, err)
	return tk
}

// awaitRequest waits until the fake model has received request n.
func (b *crashBundle) awaitRequest(t *testing.T, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		select {
		case got := <-b.llm.Arrived():
			if got >= n {
				return
			}
		case <-ctx.Done():
			t.Fatalf("model request %d never came", n)
		}
	}
}

func (b *crashBundle) waitState(t *testing.T, id string, want task.State) *task.Task {
	t.Helper()
	var got *task.Task
	require.Eventually(t, func() bool {
		tk, err := b.st.TaskGet(context.Background(), b.user.TeamIDs(), id)
		got = tk
		return err == nil && tk.State == want
	}, 60*time.Second, 20*time.Millisecond, "task never reached %s", want)
	return got
}

// ledgerRuns maps each probe label to the call keys of its runs, and
// records which process ran it.
func (b *crashBundle) ledgerRuns(t *testing.T) (keys map[string][]string, pids map[string][]string) {
	t.Helper()
	raw, err := os.ReadFile(b.ledger)
	require.NoError(t, err)
	keys, pids = map[string][]string{}, map[string][]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(l)
		require.Len(t, f, 3, "ledger line %q", l)
		pids[f[1]] = append(pids[f[1]], f[0])
		keys[f[1]] = append(keys[f[1]], f[2])
	}
	return keys, pids
}

// checkEvents asserts gap-free seqs, the terminal event, and returns the
// number of agent.tool_result events per call id.
func (b *crashBundle) checkEvents(t *testing.T, id string) map[string]int {
	t.Helper()
	evs, err := b.st.EventList(t.Context(), b.user.TeamIDs(), id, 0, 0)
	require.NoError(t, err)
	results := map[string]int{}
	for i, e := range evs {
		require.Equal(t, i+1, e.Seq, "event seqs have no gaps")
		if e.Type == task.EventAgentToolResult {
			var d struct {
				CallID string `json:"call_id"`
			}
			require.NoError(t, json.Unmarshal(e.Data, &d))
			results[d.CallID]++
		}
	}
	require.Equal(t, task.EventTaskCompleted, evs[len(evs)-1].Type)
	return results
}

func (b *crashBundle) state(t *testing.T, id string) *agent.State {
	t.Helper()
	row, err := b.st.AgentStateGet(t.Context(), id)
	require.NoError(t, err)
	s, err := agent.StateFromRow(row)
	require.NoError(t, err)
	return s
}

func pidOf(w *worker) string { return fmt.Sprint(w.cmd.Process.Pid) }

// TestSIGKILLMidRun kills the worker process that runs an agent task and
// lets another worker process resume it from the last persisted state.
func TestSIGKILLMidRun(t *testing.T) {
	t.Parallel()

	t.Run("WhileWaitingForTheModelCompletedCallsAreNotRerun", func(t *testing.T) {
		t.Parallel()
		b := setupCrash(t)
		hold := make(chan struct{}) // never closed: the first worker dies waiting
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "probe", map[string]any{"x": "one"}),
				llmtest.ToolCall("c2", "probe", map[string]any{"x": "two"})}},
			llmtest.Reply{Block: hold},
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c3", "probe", map[string]any{"x": "three"})}},
			llmtest.Reply{Content: "All three probes ran."},
		)
		w1 := b.startWorker(t, "")
		tk := b.submit(t)
		// Request 2 is sent only after both results were saved.
		b.awaitRequest(t, 2)
		w1.kill()

		s := b.state(t, tk.ID)
		require.Empty(t, s.Loop.Pending, "both calls' results were persisted before the model was asked again")
		require.Equal(t, 1, s.Iteration, "the interrupted model call is not counted")
		keys, _ := b.ledgerRuns(t)
		require.Len(t, keys["one"], 1)
		require.Len(t, keys["two"], 1)

		w2 := b.startWorker(t, "")
		done := b.waitState(t, tk.ID, task.StateCompleted)
		require.JSONEq(t, `{"text":"All three probes ran."}`, string(done.Result))
		require.Equal(t, 2, done.Attempt, "the rescue after the lease expired is a new attempt")

		keys, pids := b.ledgerRuns(t)
		for _, x := range []string{"one", "two", "three"} {
			require.Len(t, keys[x], 1, "probe %s ran exactly once", x)
		}
		require.Equal(t, []string{pidOf(w1)}, pids["one"])
		require.Equal(t, []string{pidOf(w1)}, pids["two"])
		require.Equal(t, []string{pidOf(w2)}, pids["three"])
		require.Equal(t, map[string]int{"c1": 1, "c2": 1, "c3": 1}, b.checkEvents(t, tk.ID), "one tool_result per call")

		reqs := b.llm.Requests()
		require.Len(t, reqs, 4)
		require.Equal(t, reqs[1].Messages, reqs[2].Messages, "the resumed request is the interrupted one, from the persisted history")
		for _, id := range []string{"c1", "c2"} {
			out, ok := toolMessage(reqs[2], id)
			require.True(t, ok, "the resumed request carries %s's result", id)
			require.Contains(t, out, fmt.Sprintf(`"pid":%s`, pidOf(w1)), "the result the killed worker got")
		}
		out, ok := toolMessage(reqs[3], "c3")
		require.True(t, ok)
		require.Contains(t, out, fmt.Sprintf(`"pid":%s`, pidOf(w2)))
	})

	t.Run("DuringAToolCallOnlyTheInterruptedCallRunsAgain", func(t *testing.T) {
		t.Parallel()
		b := setupCrash(t)
		b.llm.Push(
			llmtest.Reply{ToolCalls: []llmtest.Call{llmtest.ToolCall("c1", "probe", map[string]any{"x": "one"}),
				llmtest.ToolCall("c2", "probe", map[string]any{"x": "stuck"})}},
			llmtest.Reply{Content: "Both probes ran."},
		)
		w1 := b.startWorker(t, "stuck")
		tk := b.submit(t)
		w1.expect(t, "blocked stuck")
		w1.kill()

		s := b.state(t, tk.ID)
		require.Len(t, s.Loop.Pending, 1, "the interrupted call has no result")
		require.Equal(t, "c2", s.Loop.Pending[0].ID)

		w2 := b.startWorker(t, "")
		b.waitState(t, tk.ID, task.StateCompleted)

		keys, pids := b.ledgerRuns(t)
		require.Len(t, keys["one"], 1, "the completed call is not run again")
		require.Len(t, keys["stuck"], 2, "the interrupted call runs again")
		require.Equal(t, keys["stuck"][0], keys["stuck"][1], "with the same call key")
		require.Equal(t, []string{pidOf(w1), pidOf(w2)}, pids["stuck"])
		require.Equal(t, map[string]int{"c1": 1, "c2": 1}, b.checkEvents(t, tk.ID))

		reqs := b.llm.Requests()
		require.Len(t, reqs, 2)
		out, _ := toolMessage(reqs[1], "c1")
		require.Contains(t, out, fmt.Sprintf(`"pid":%s`, pidOf(w1)))
		out, _ = toolMessage(reqs[1], "c2")
		require.Contains(t, out, fmt.Sprintf(`"pid":%s`, pidOf(w2)))
	})
}
