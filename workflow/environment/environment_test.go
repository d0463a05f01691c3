package environment

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func mustWindow(t *testing.T, from, to, tz string) Window {
	t.Helper()
	w, err := ParseWindow(from, to, tz, "weekend")
	require.NoError(t, err)
	return w
}

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	require.NoError(t, err)
	return v
}

func TestParseWindowRefusesWhatDoesNotRead(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ from, to, tz string }{
		{"Fri 16:00", "08:00", ""},     // one weekly, one daily
		{"Fry 16:00", "Mon 08:00", ""}, // no such day
		{"Fri 25:00", "Mon 08:00", ""}, // no such hour
		{"Fri 16:00", "Mon 08:00", "Mars/Olympus"},
		{"16:00", "16:00", ""}, // empty
		{"4pm", "8am", ""},
	} {
		_, err := ParseWindow(c.from, c.to, c.tz, "")
		require.Error(t, err, "%+v", c)
	}
}

func TestFrozenWeekendWindowInItsTimeZone(t *testing.T) {
	t.Parallel()
	// Fri 16:00 to Mon 08:00 in Berlin; in November Berlin is UTC+1.
	e := &Env{Name: "production", Freeze: []Window{mustWindow(t, "Fri 16:00", "Mon 08:00", "Europe/Berlin")}}
	for _, c := range []struct {
		now    string
		frozen bool
		until  string
	}{
		{"2026-11-27T14:59:00Z", false, ""},                    // Fri 15:59 Berlin
		{"2026-11-27T15:00:00Z", true, "2026-11-30T07:00:00Z"}, // Fri 16:00 Berlin: starts
		{"2026-11-28T12:00:00Z", true, "2026-11-30T07:00:00Z"}, // Saturday
		{"2026-11-29T23:30:00Z", true, "2026-11-30T07:00:00Z"}, // Monday 00:30 Berlin, across midnight
		{"2026-11-30T07:00:00Z", false, ""},                    // Mon 08:00 Berlin: ends
		{"2026-12-02T12:00:00Z", false, ""},                    // Wednesday
	} {
		s, ok := e.Frozen(nil, at(t, c.now))
		require.Equal(t, c.frozen, ok, c.now)
		if ok {
			require.Equal(t, at(t, c.until), s.Until, c.now)
			require.Equal(t, "weekend", s.Reason)
		}
	}
}

func TestFrozenDailyWindowAcrossMidnightAndSummerTime(t *testing.T) {
	t.Parallel()
	e := &Env{Freeze: []Window{mustWindow(t, "22:00", "06:00", "America/New_York")}}
	// July: New York is UTC-4.
	s, ok := e.Frozen(nil, at(t, "2026-07-15T03:00:00Z")) // 23:00 local
	require.True(t, ok)
	require.Equal(t, at(t, "2026-07-15T10:00:00Z"), s.Until)
	_, ok = e.Frozen(nil, at(t, "2026-07-15T12:00:00Z")) // 08:00 local
	require.False(t, ok)
	// The night the clocks go back (1 Nov 2026): 22:00 EDT to 06:00 EST.
	s, ok = e.Frozen(nil, at(t, "2026-11-01T05:30:00Z"))
	require.True(t, ok)
	require.Equal(t, at(t, "2026-11-01T11:00:00Z"), s.Until)
}

func TestFrozenFollowsFreezesThatTouch(t *testing.T) {
	t.Parallel()
	e := &Env{Freeze: []Window{mustWindow(t, "Sat 00:00", "Sun 00:00", "")}}
	api := []Span{{ID: "f1", From: at(t, "2026-11-27T12:00:00Z"), Until: at(t, "2026-11-28T00:00:00Z"), Reason: "release party", Source: "api"}}
	s, ok := e.Frozen(api, at(t, "2026-11-27T13:00:00Z"))
	require.True(t, ok)
	require.Equal(t, "release party", s.Reason)
	require.Equal(t, at(t, "2026-11-29T00:00:00Z"), s.Until, "the API freeze runs into the weekly one")
	// A nil Env (no rules) is frozen only by the API.
	_, ok = (*Env)(nil).Frozen(api, at(t, "2026-11-27T13:00:00Z"))
	require.True(t, ok)
	_, ok = (*Env)(nil).Frozen(api, at(t, "2026-11-28T13:00:00Z"))
	require.False(t, ok)
}

func TestBetweenListsTheNextWeeksWindows(t *testing.T) {
	t.Parallel()
	w := mustWindow(t, "Fri 16:00", "Mon 08:00", "UTC")
	from := at(t, "2026-11-25T00:00:00Z") // a Wednesday
	got := w.Between(from, from.Add(7*24*time.Hour))
	require.Len(t, got, 1)
	require.Equal(t, at(t, "2026-11-27T16:00:00Z"), got[0].From)
	require.Equal(t, at(t, "2026-11-30T08:00:00Z"), got[0].Until)
	// From inside a window: that window is listed too.
	got = w.Between(at(t, "2026-11-29T00:00:00Z"), at(t, "2026-12-06T00:00:00Z"))
	require.Len(t, got, 2)
	require.Equal(t, at(t, "2026-11-27T16:00:00Z"), got[0].From)
	require.Equal(t, at(t, "2026-12-04T16:00:00Z"), got[1].From)
}

func TestVersionAndPromotionChecks(t *testing.T) {
	t.Parallel()
	e := &Env{Name: "production", Versions: regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+$`),
		Requires: &Requires{Env: "staging", Soak: 30 * time.Minute}}
	require.True(t, e.VersionOK("1.2.3"))
	require.False(t, e.VersionOK("1.2.3-rc1"))
	require.True(t, (*Env)(nil).VersionOK("anything"))

	now := at(t, "2026-11-27T12:00:00Z")
	ok, why := e.PromotionCheck("1.2.3", nil, now)
	require.False(t, ok)
	require.Contains(t, why, "never")
	require.Contains(t, why, "staging")
	done := now.Add(-10 * time.Minute)
	ok, why = e.PromotionCheck("1.2.3", &done, now)
	require.False(t, ok)
	// In people's words: no Go duration, no RFC 3339.
	require.Equal(t, "production requires version 1.2.3 to soak in staging for 30 minutes: it completed there at 11:50 UTC today, so it may go on at 12:20 UTC today (in 20 minutes)", why)
	done = now.Add(-31 * time.Minute)
	ok, _ = e.PromotionCheck("1.2.3", &done, now)
	require.True(t, ok)
}
