package handlers

import (
	"bytes"
	"context"
	"strconv"
	"sync"

	"flightdeck/internal/auth"
	"flightdeck/views/layout"
	"flightdeck/workflow/task"
)

// watchApprovals keeps the navigation's approvals badge of a page current
// over the page's socket (the task list's, a run page's): it counts the
// approvals the viewer may decide when the socket connects (what changed
// while none listened) and again whenever a task of the viewer's teams
// may have moved the count: one that now waits for an approval, or one
// the last count found waiting (decided, expired, cancelled). A new count
// goes out as the badges, swapped by id. shown is the count the page
// shows (its socket's badge=N), -1 when it did not say: then the first
// count is only taken as what it shows. The count runs on a goroutine of
// its own: the team feed's deliveries must not wait on the database.
func (h *Handler) watchApprovals(conn *wsConn, u *auth.User, shown int) (stop func()) {
	var mu sync.Mutex
	waiting := map[string]bool{} // tasks the last count found waiting for the viewer
	recount := make(chan struct{}, 1)
	poke := func() {
		select {
		case recount <- struct{}{}:
		default: // a count is due already
		}
	}
	poke()
	unsubscribe := h.teamFeed.subscribe(u.TeamIDs(), func(ch *taskChange) bool {
		mu.Lock()
		moved := ch.task.State == task.StateAwaitingApproval || waiting[ch.task.ID]
		mu.Unlock()
		if moved {
			poke()
		}
		return true
	}, nil)
	ctx, cancel := context.WithCancel(conn.ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		sent, first := shown, shown < 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-recount:
			}
			rctx, rcancel := context.WithTimeout(ctx, h.requestTimeout())
			items, _, err := h.store.ApprovalsPending(rctx, u.ID, inboxLimit)
			rcancel()
			if err != nil {
				continue // the next change counts again
			}
			mu.Lock()
			clear(waiting)
			for _, it := range items {
				waiting[it.TaskID] = true
			}
			mu.Unlock()
			if len(items) == sent || first {
				sent, first = len(items), false
				continue
			}
			sent = len(items)
			var buf bytes.Buffer
			_ = layout.ApprovalBadges(sent).Render(context.Background(), &buf)
			if !conn.send(buf.Bytes()) {
				return
			}
		}
	})
	return func() {
		unsubscribe()
		cancel()
		wg.Wait()
	}
}

// shownBadge reads the count a page's badge shows from its socket's URL
// (badge=N), -1 when absent or unreadable.
func shownBadge(q string) int {
	n, err := strconv.Atoi(q)
	if err != nil || n < 0 {
		return -1
	}
	return n
}
