package task

// Concurrency policies (a pipeline's concurrency block, contract §6): what
// a new task does while another task holds its key.
const (
	PolicyQueue            = "queue"              // wait its turn, in priority order
	PolicyCancelInProgress = "cancel_in_progress" // cancel the holder (it compensates), then run
	PolicyCancelNewest     = "cancel_newest"      // be cancelled at once
)

// CancelledOnSubmit decides a new task's fate under its key's policy while
// holder ("" for none) holds the key: under cancel_newest it is cancelled
// at once, and why (its error) says so; "" lets it wait or run.
func CancelledOnSubmit(policy, key, holder string) (why string) {
	if policy != PolicyCancelNewest || key == "" || holder == "" {
		return ""
	}
	return "cancelled at once: task " + holder + " holds concurrency key " + key + " (policy cancel_newest)"
}
