package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flightdeck/internal/auth"
	"flightdeck/internal/dbtest"
	"flightdeck/internal/testfactory"
	"flightdeck/store"
)

// TestLocalHealthList: a monitored host reads as not checked, then as its
// probe found it with the open alert's message; another team's host is
// not listed.
func TestLocalHealthList(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := store.New(dbtest.DB(t))
	acme := testfactory.User(t, st, "health@acme.test", "acme", auth.RoleDeployer).Memberships[0].TeamID
	rival := testfactory.User(t, st, "health@rival.test", "rival", auth.RoleDeployer).Memberships[0].TeamID
	_, err := st.LocalMonitorCreate(ctx, "acme", "shop.staging", time.Second, store.LocalEffect{Key: "k1", Action: "local.monitor_create"})
	require.NoError(t, err)
	_, err = st.LocalMonitorCreate(ctx, "rival", "cart.staging", time.Second, store.LocalEffect{Key: "k2", Action: "local.monitor_create"})
	require.NoError(t, err)

	hosts, err := st.LocalHealthList(ctx, []string{acme})
	require.NoError(t, err)
	require.Len(t, hosts, 1)
	require.Equal(t, store.LocalHostHealth{Host: "shop.staging", TeamID: acme, Monitored: true}, hosts[0])

	probes, err := st.LocalMonitorClaimDue(ctx, 10)
	require.NoError(t, err)
	for _, p := range probes {
		_, err := st.LocalMonitorRecord(ctx, p.MonitorID, false, "GET / answered 503")
		require.NoError(t, err)
	}
	hosts, err = st.LocalHealthList(ctx, []string{acme, rival})
	require.NoError(t, err)
	require.Len(t, hosts, 2)
	require.Equal(t, "shop.staging", hosts[1].Host)
	require.NotNil(t, hosts[1].Healthy)
	require.False(t, *hosts[1].Healthy)
	require.NotNil(t, hosts[1].LastCheckedAt)
	require.Equal(t, "GET / answered 503", *hosts[1].Alert)
	require.Equal(t, rival, hosts[0].TeamID)
}
