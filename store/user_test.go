package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/store"
)

func TestUserAddIsIdempotent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	id1, err := st.UserAdd(ctx, store.UserAddParams{Email: "a@acme.test", Team: "acme", Role: auth.RoleDeployer, PasswordHash: "h1"})
	require.NoError(t, err)
	id2, err := st.UserAdd(ctx, store.UserAddParams{Email: "a@acme.test", Team: "acme", Role: auth.RoleAdmin})
	require.NoError(t, err)
	require.Equal(t, id1, id2)
	_, err = st.UserAdd(ctx, store.UserAddParams{Email: "a@acme.test", Team: "beta", Role: auth.RoleViewer})
	require.NoError(t, err)

	u, hash, err := st.UserGetByEmail(ctx, "a@acme.test")
	require.NoError(t, err)
	require.Equal(t, "h1", hash, "an empty password hash keeps the old one")
	require.Len(t, u.Memberships, 2)
	require.Equal(t, "acme", u.Memberships[0].Team)
	require.Equal(t, auth.RoleAdmin, u.Memberships[0].Role, "role updated")
	require.Equal(t, auth.RoleViewer, u.Memberships[1].Role)

	_, _, err = st.UserGetByEmail(ctx, "nobody@acme.test")
	require.True(t, errors.Is(err, store.ErrNotFound))
}

// TestUserAutoJoin: single sign-on's first sign-in creates the user, the
// team when new and the membership; an email that has an account is left
// as it is (ErrConflict).
func TestUserAutoJoin(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	id, err := st.UserAutoJoin(ctx, "new@acme.test", "fresh", auth.RoleViewer)
	require.NoError(t, err)
	u, hash, err := st.UserGetByEmail(ctx, "new@acme.test")
	require.NoError(t, err)
	require.Equal(t, id, u.ID)
	require.Empty(t, hash)
	require.Equal(t, []auth.Membership{{TeamID: u.Memberships[0].TeamID, Team: "fresh", Role: auth.RoleViewer}}, u.Memberships)

	_, err = st.UserAdd(ctx, store.UserAddParams{Email: "old@acme.test", Team: "acme", Role: auth.RoleAdmin})
	require.NoError(t, err)
	_, err = st.UserAutoJoin(ctx, "old@acme.test", "fresh", auth.RoleViewer)
	require.ErrorIs(t, err, store.ErrConflict)
	u, _, err = st.UserGetByEmail(ctx, "old@acme.test")
	require.NoError(t, err)
	require.Len(t, u.Memberships, 1, "an existing account does not join")
	require.Equal(t, auth.RoleAdmin, u.Memberships[0].Role)

	// Two first sign-ins at once: one creates the account, the other finds it.
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := st.UserAutoJoin(ctx, "twice@acme.test", "fresh", auth.RoleViewer)
			errs <- err
		}()
	}
	first, second := <-errs, <-errs
	require.ElementsMatch(t, []bool{true, false}, []bool{first == nil, second == nil}, "%v, %v", first, second)
	require.True(t, errors.Is(first, store.ErrConflict) || errors.Is(second, store.ErrConflict))
}

func TestSessionsAndTokens(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := dbtest.Store(t)
	id, err := st.UserAdd(ctx, store.UserAddParams{Email: "a@acme.test", Team: "acme", Role: auth.RoleViewer})
	require.NoError(t, err)

	t.Run("SessionLivesUntilDeleted", func(t *testing.T) {
		_, h := auth.NewSecret("")
		require.NoError(t, st.SessionCreate(ctx, h, id, time.Hour))
		u, err := st.SessionUser(ctx, h)
		require.NoError(t, err)
		require.Equal(t, "a@acme.test", u.Email)
		require.NoError(t, st.SessionDelete(ctx, h))
		_, err = st.SessionUser(ctx, h)
		require.ErrorIs(t, err, store.ErrNotFound)
	})

	t.Run("TokenRevokedByName", func(t *testing.T) {
		_, h1 := auth.NewSecret(auth.TokenPrefix)
		_, h2 := auth.NewSecret(auth.TokenPrefix)
		require.NoError(t, st.TokenCreate(ctx, "a@acme.test", "ci", h1))
		require.NoError(t, st.TokenCreate(ctx, "a@acme.test", "laptop", h2))
		n, err := st.TokenRevoke(ctx, "a@acme.test", "ci")
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		_, err = st.TokenUser(ctx, h1)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = st.TokenUser(ctx, h2)
		require.NoError(t, err)
		require.ErrorIs(t, st.TokenCreate(ctx, "ghost@acme.test", "", h1), store.ErrNotFound)
	})

	t.Run("LoginLinkWorksOnce", func(t *testing.T) {
		_, h := auth.NewSecret("")
		require.NoError(t, st.LoginLinkCreate(ctx, h, id, time.Hour))
		got, err := st.LoginLinkUse(ctx, h)
		require.NoError(t, err)
		require.Equal(t, id, got)
		_, err = st.LoginLinkUse(ctx, h)
		require.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestPingFailsFastWhenDatabaseIsDown(t *testing.T) {
	t.Parallel()
	pool, err := store.Open(t.Context(), "postgres://postgres@127.0.0.1:1/none?sslmode=disable", 2)
	require.NoError(t, err)
	defer pool.Close()
	start := time.Now()
	err = store.New(pool).Ping(t.Context())
	require.ErrorIs(t, err, store.ErrUnavailable)
	require.Less(t, time.Since(start), 10*time.Second)
}
