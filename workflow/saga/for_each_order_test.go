package saga_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/task"
)

// A for_each with a concurrency starts its items in the order of the list.
// Before, each item's goroutine raced for a slot, so with concurrency 1 the
// items ran in a random order (the last often first).
func TestForEachStartsItemsInListOrder(t *testing.T) {
	t.Parallel()
	p, err := pipeline.Parse("regions.yaml", []byte(`name: regions
params:
  - {name: regions, type: list, default: [r1, r2, r3, r4, r5, r6, r7, r8]}
steps:
  - for_each: "{{ .params.regions }}"
    concurrency: 1
    step: {name: deploy, action: test.do}
`))
	require.NoError(t, err)
	b := setup(t, p)
	for range 3 {
		tk := b.submit(t, "regions")
		b.wait(t, tk.ID, task.StateCompleted)
		rows, err := b.st.StepList(t.Context(), tk.ID)
		require.NoError(t, err)
		var names []string
		for _, r := range rows {
			names = append(names, "do:"+r.Name)
		}
		require.Len(t, names, 8)
		got := b.rec.done()
		require.Equal(t, names, got[len(got)-8:], "started (and, one at a time, done) in list order")
	}
}
