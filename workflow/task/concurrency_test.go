package task

import "testing"

func TestCancelledOnSubmit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, policy, key, holder string
		cancelled                 bool
	}{
		{"NewestWhileHeld", PolicyCancelNewest, "app:shop", "t1", true},
		{"NewestKeyFree", PolicyCancelNewest, "app:shop", "", false},
		{"NewestNoKey", PolicyCancelNewest, "", "t1", false},
		{"QueueWaits", PolicyQueue, "app:shop", "t1", false},
		{"InProgressRuns", PolicyCancelInProgress, "app:shop", "t1", false},
		{"NoPolicy", "", "app:shop", "t1", false},
	} {
		why := CancelledOnSubmit(c.policy, c.key, c.holder)
		if (why != "") != c.cancelled {
			t.Errorf("%s: CancelledOnSubmit(%q, %q, %q) = %q, want cancelled %v", c.name, c.policy, c.key, c.holder, why, c.cancelled)
		}
		if c.cancelled && why != "cancelled at once: task t1 holds concurrency key app:shop (policy cancel_newest)" {
			t.Errorf("%s: why = %q", c.name, why)
		}
	}
}
