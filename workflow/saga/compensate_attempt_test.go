package saga_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/testfactory"
	"flightdeck/workflow/action"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// attempts is an undo action that records the attempt of each call and
// fails while fail says so.
type attempts struct {
	mu   sync.Mutex
	seen []int
	fail bool
}

func (a *attempts) action() action.Action {
	return action.Func(func(_ context.Context, in action.Input) (json.RawMessage, error) {
		a.mu.Lock()
		defer a.mu.Unlock()
		a.seen = append(a.seen, in.Attempt)
		if a.fail {
			return nil, errors.New("the DNS API is down")
		}
		return json.RawMessage(`{}`), nil
	})
}

func (a *attempts) got() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.seen...)
}

func (a *attempts) setFail(v bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = v
}

// A compensation run again (here an admin's retry after needs_attention;
// a crash's resume alike) goes on counting its attempts: its action sees
// FLIGHTDECK_ATTEMPT 3 after two failed tries, not 1 again as before.
func TestResumedCompensationCountsOn(t *testing.T) {
	t.Parallel()
	undo := &attempts{fail: true}
	p := &pipeline.Pipeline{Name: "p", Steps: []pipeline.Step{
		{Name: "a", Action: "test.do", Compensate: &pipeline.Compensation{Action: "test.count", Retries: 1}},
		{Name: "b", Action: "test.do"},
	}}
	b := setupWith(t, action.Registry{"test.count": undo.action()}, p)
	b.rec.fail["do:b"] = -1
	tk := b.submit(t, "p")
	b.wait(t, tk.ID, task.StateNeedsAttention)
	require.Equal(t, []int{1, 2}, undo.got())

	undo.setFail(false)
	admin := testfactory.User(t, b.st, "root@acme.test", "acme", auth.RoleAdmin)
	_, err := b.st.TaskResolve(t.Context(), admin.TeamIDs(), tk.ID, "retry", admin.Email, "fixed the DNS API")
	require.NoError(t, err)
	b.wait(t, tk.ID, task.StateFailed)
	require.Equal(t, []int{1, 2, 3}, undo.got())
}

// compensate.retries: 0 means no retry, as a step's retries: 0 does; it
// meant 3 (four tries) before.
func TestCompensationRetriesZeroMeansNone(t *testing.T) {
	t.Parallel()
	undo := &attempts{fail: true}
	p := &pipeline.Pipeline{Name: "p", Steps: []pipeline.Step{
		{Name: "a", Action: "test.do", Compensate: &pipeline.Compensation{Action: "test.count", Retries: 0}},
		{Name: "b", Action: "test.do"},
	}}
	b := setupWith(t, action.Registry{"test.count": undo.action()}, p)
	b.rec.fail["do:b"] = -1
	tk := b.submit(t, "p")
	b.wait(t, tk.ID, task.StateNeedsAttention)
	require.Equal(t, []int{1}, undo.got(), "one try, no retry")

	loaded, err := pipeline.Parse("p.yaml", []byte("name: p\nsteps:\n  - {name: a, action: noop, compensate: {action: noop, retries: 0}}\n  - {name: b, action: noop, compensate: {action: noop}}\n"))
	require.NoError(t, err)
	require.Equal(t, 0, loaded.Steps[0].Compensate.Retries, "retries: 0 as written")
	require.Equal(t, pipeline.CompensationRetriesDefault, loaded.Steps[1].Compensate.Retries, "unset: the default")
}
