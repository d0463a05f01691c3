package handlers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flightdeck/internal/notify"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/action"
	"flightdeck/workflow/artifact"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// A step whose output holds a NUL byte and invalid UTF-8 keeps its whole
// artifact, byte for byte; the summary, excerpt, step.log events and the
// run page show the odd bytes as U+FFFD. Before, the task completed with
// "artifacts":[] (the summary's NUL failed the artifact's last write, and
// the runner dropped the error).
func TestStepOutputBytesKeptWhole(t *testing.T) {
	t.Parallel()
	const script = `echo a; printf 'a\000b\n'; printf '\377\376 error\n'`
	want := "a\na\x00b\n\xff\xfe error\n"
	catalog, err := pipeline.NewCatalog(&pipeline.Pipeline{Name: "bytes", Steps: []pipeline.Step{
		{Name: "print", Action: "exec", With: map[string]any{"command": []any{"sh", "-c", script}}}}})
	require.NoError(t, err)
	b := setupCatalog(t, nil, catalog)
	logger := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Logger: logger, RetryBase: time.Millisecond, FlushInterval: 10 * time.Millisecond,
		Actions: action.Registry{"exec": action.Exec{}}, Artifacts: artifactSink{artifact.New(b.store, 0)}})
	n := notify.NewListener(b.store, nil)
	p := queue.New(b.store, map[task.Kind]queue.Handler{task.KindDeploy: runner}, queue.Config{
		Workers: 1, PollInterval: 20 * time.Millisecond, Grace: 10 * time.Millisecond, Logger: logger})
	p.Attach(n)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.Run(ctx) })
	wg.Go(func() { _ = p.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })

	r := b.api(t, http.MethodPost, "/api/v1/tasks", b.aliceToken, `{"kind":"deploy","pipeline":"bytes"}`, nil)
	require.Equal(t, http.StatusAccepted, r.status, r.raw)
	id := r.body["id"].(string)
	r = b.waitState(t, id, "completed")
	arts := r.body["artifacts"].([]any)
	require.Len(t, arts, 1, "the output is kept")
	art := arts[0].(map[string]any)
	artID := art["id"].(string)
	require.EqualValues(t, len(want), art["bytes"])
	require.Contains(t, art["summary"], "last line: \uFFFD\uFFFD error")

	raw := b.api(t, http.MethodGet, "/api/v1/artifacts/"+artID, b.aliceToken, "", nil)
	require.Equal(t, http.StatusOK, raw.status)
	require.Equal(t, want, raw.raw, "byte for byte")
	sum := sha256.Sum256([]byte(want))
	require.Equal(t, `"`+hex.EncodeToString(sum[:])+`"`, raw.header.Get("ETag"))
	meta := b.api(t, http.MethodGet, "/api/v1/artifacts/"+artID+"/meta", b.aliceToken, "", nil)
	require.Equal(t, hex.EncodeToString(sum[:]), meta.body["sha256"])
	require.Contains(t, meta.body["excerpt"], "2: a\uFFFDb\n3: \uFFFD\uFFFD error")

	evs := b.api(t, http.MethodGet, "/api/v1/tasks/"+id+"/events", b.aliceToken, "", nil)
	var logged []string
	for _, e := range evs.body["events"].([]any) {
		if e := e.(map[string]any); e["type"] == "step.log" {
			logged = append(logged, e["message"].(string))
		}
	}
	require.Equal(t, []string{"a", "a\uFFFDb", "\uFFFD\uFFFD error"}, logged)

	c := b.browser(t)
	b.login(t, c, "alice@acme.test", testPassword)
	_, page := b.get(t, c, "/tasks/"+id, nil)
	require.True(t, strings.Contains(page, "a\uFFFDb"), "the run page's log shows the odd byte")
}
