package queue

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// The walk starts right after the last task claimed when that task is older
// than the claim's time minus claimLag (a backlog), and claimLag before the
// claim otherwise (tasks submitted meanwhile may still be committing).
func TestClaimWalkStart(t *testing.T) {
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	p := &Pool{cfg: Config{PollInterval: time.Hour}}
	require.Nil(t, p.claimFrom(), "the first claim walks from the start")

	backlog := &task.Task{ID: "0190a000-0000-7000-8000-000000000001", Priority: task.PriorityNormal, CreatedAt: at.Add(-time.Minute)}
	p.claimedTo(backlog, at, false)
	k := p.claimFrom()
	require.NotNil(t, k)
	require.Equal(t, store.KeyOf(backlog), *k, "an old task: right after it")

	fresh := &task.Task{ID: "0190a000-0000-7000-8000-000000000002", Priority: task.PriorityNormal, CreatedAt: at.Add(-claimLag / 5)}
	p.claimedTo(fresh, at, true)
	k = p.claimFrom()
	require.Equal(t, store.ClaimKey{Priority: task.PriorityNormal, CreatedAt: at.Add(-claimLag)}, *k, "a young task: claimLag before the claim")

	// A claim from a key never moves the place back.
	p.claimedTo(backlog, at.Add(time.Second), true)
	require.Equal(t, store.ClaimKey{Priority: task.PriorityNormal, CreatedAt: at.Add(-claimLag)}, *p.claimFrom())

	p.requeued()
	require.Nil(t, p.claimFrom(), "a requeue wake-up walks from the start")
}
