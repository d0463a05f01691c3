package store_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

func TestAgentStore(t *testing.T) {
	t.Parallel()
	st := dbtest.Store(t)
	u := testfactory.User(t, st, "dev@acme.test", "acme", auth.RoleDeployer)
	viewerTeams := testfactory.User(t, st, "x@rival.test", "rival", auth.RoleAdmin).TeamIDs()
	claimAgent := func(t *testing.T) *task.Task {
		t.Helper()
		_, _, err := st.TaskInsert(t.Context(), store.TaskInsertParams{TeamID: u.Memberships[0].TeamID, CreatedByID: u.ID,
			Kind: task.KindAgent, Prompt: "hi", Priority: task.PriorityHotfix, MaxAttempts: 5})
		require.NoError(t, err)
		claimed, err := st.TaskClaim(t.Context(), "w1", 1, time.Minute)
		require.NoError(t, err)
		require.Len(t, claimed, 1)
		return claimed[0].Task
	}
	state := store.AgentState{Goal: "hi", Iteration: 1, Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`)}

	t.Run("StateSaveIsFencedByTheLease", func(t *testing.T) {
		tk := claimAgent(t)
		ev := task.Event{Type: task.EventAgentThinking, Status: task.StatusThinking, Step: 1, TotalStep: 20, Message: "thinking"}
		written, err := st.TaskWrites(t.Context(), []store.TaskWrite{{ID: tk.ID, Token: tk.LeaseToken,
			Agent: &store.AgentSave{State: state, Budget: 20}, Events: []task.Event{ev}}})
		require.NoError(t, err)
		require.Len(t, written, 1)
		stale := state
		stale.Iteration = 9
		written, err = st.TaskWrites(t.Context(), []store.TaskWrite{{ID: tk.ID, Token: "00000000-0000-0000-0000-000000000000",
			Agent: &store.AgentSave{State: stale, Budget: 20}, Events: []task.Event{ev}}})
		require.NoError(t, err)
		require.Empty(t, written, "a stale owner's write is not applied")
		got, err := st.AgentStateGet(t.Context(), tk.ID)
		require.NoError(t, err)
		require.Equal(t, 1, got.Iteration, "a stale owner writes nothing")
		require.JSONEq(t, `[{"role":"user","content":"hi"}]`, string(got.Messages))
		evs, err := st.EventList(t.Context(), u.TeamIDs(), tk.ID, 0, 0)
		require.NoError(t, err)
		for i, e := range evs {
			require.Equal(t, i+1, e.Seq)
		}
		require.Equal(t, task.EventAgentThinking, evs[len(evs)-1].Type)
		tk2, err := st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
		require.NoError(t, err)
		require.Equal(t, task.Progress{Step: 1, TotalStep: 20, Percent: 5}, tk2.Progress)
		_, err = st.AgentStateView(t.Context(), viewerTeams, tk.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "another team's state does not exist")
	})

	t.Run("QuestionParkAnswerOnce", func(t *testing.T) {
		tk := claimAgent(t)
		ev := task.Event{Type: task.EventAgentQuestion, Status: task.StatusToolCall, Message: "Which env?"}
		written, err := st.TaskWrites(t.Context(), []store.TaskWrite{{ID: tk.ID, Token: tk.LeaseToken,
			State: task.StateAwaitingInput, Release: true, Agent: &store.AgentSave{State: state, Budget: 20},
			Question: &store.QuestionPark{CallSeq: 1, Text: "Which env?", Event: ev},
			Events:   []task.Event{{Type: task.EventTaskState, Status: task.StatusLog, Message: "Waiting for an answer"}}}})
		require.NoError(t, err)
		require.Len(t, written, 1)
		q, err := st.AgentQuestionGet(t.Context(), tk.ID, 1)
		require.NoError(t, err)
		evs, err := st.EventList(t.Context(), u.TeamIDs(), tk.ID, 0, 0)
		require.NoError(t, err)
		require.Len(t, evs, 3, "submitted, the question, the park")
		require.Equal(t, task.EventAgentQuestion, evs[1].Type, "the question's event comes before the park's state change")
		require.Contains(t, string(evs[1].Data), q.ID)
		parked, err := st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
		require.NoError(t, err)
		require.Equal(t, task.StateAwaitingInput, parked.State)
		claimed, err := st.TaskClaim(t.Context(), "w2", 5, time.Minute)
		require.NoError(t, err)
		require.Empty(t, claimed, "a task waiting for input holds no worker and is not claimable")

		_, err = st.AgentQuestionAnswer(t.Context(), store.AgentQuestionAnswerParams{TeamIDs: viewerTeams, TaskID: tk.ID, QuestionID: q.ID, Text: "x", Actor: "x@rival.test"})
		require.ErrorIs(t, err, store.ErrNotFound)
		a, err := st.AgentQuestionAnswer(t.Context(), store.AgentQuestionAnswerParams{TeamIDs: u.TeamIDs(), TaskID: tk.ID, QuestionID: q.ID, Text: "staging", Actor: u.Email})
		require.NoError(t, err)
		require.Equal(t, "answered", a.State)
		_, err = st.AgentQuestionAnswer(t.Context(), store.AgentQuestionAnswerParams{TeamIDs: u.TeamIDs(), TaskID: tk.ID, QuestionID: q.ID, Text: "prod", Actor: u.Email})
		require.ErrorIs(t, err, store.ErrConflict)
		resumed, err := st.TaskGet(t.Context(), u.TeamIDs(), tk.ID)
		require.NoError(t, err)
		require.Equal(t, task.StatePending, resumed.State)
		got, err := st.AgentQuestionGet(t.Context(), tk.ID, 1)
		require.NoError(t, err)
		require.Equal(t, "staging", *got.Answer)
	})

	t.Run("NotesOnlyForRunningAgentTasks", func(t *testing.T) {
		tk := claimAgent(t)
		require.NoError(t, st.AgentNoteAdd(t.Context(), u.TeamIDs(), tk.ID, u.Email, "one"))
		require.NoError(t, st.AgentNoteAdd(t.Context(), u.TeamIDs(), tk.ID, u.Email, "two"))
		notes, err := st.AgentNotesAfter(t.Context(), tk.ID, 0)
		require.NoError(t, err)
		require.Len(t, notes, 2)
		rest, err := st.AgentNotesAfter(t.Context(), tk.ID, notes[0].ID)
		require.NoError(t, err)
		require.Equal(t, "two", rest[0].Text)
		require.ErrorIs(t, st.AgentNoteAdd(t.Context(), viewerTeams, tk.ID, "x", "y"), store.ErrNotFound)
		dep := testfactory.Task(t, st, u, nil)
		require.ErrorIs(t, st.AgentNoteAdd(t.Context(), u.TeamIDs(), dep.ID, u.Email, "z"), store.ErrConflict)
	})
}
