package words

import (
	"testing"
	"time"
)

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                               "0 ms",
		500 * time.Millisecond:          "500 ms",
		time.Second:                     "1 second",
		45 * time.Second:                "45 seconds",
		2 * time.Minute:                 "2 minutes",
		2*time.Minute + 30*time.Second:  "2 minutes 30 seconds",
		time.Hour + 5*time.Minute + 3e9: "1 hour 5 minutes",
		24 * time.Hour:                  "1 day",
		76*time.Hour + 10*time.Minute:   "3 days 4 hours",
		-(2 * time.Minute):              "2 minutes",
	} {
		if got := Duration(d); got != want {
			t.Errorf("Duration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestAt(t *testing.T) {
	now := time.Date(2026, 11, 28, 17, 6, 0, 0, time.UTC)
	for _, c := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 11, 28, 17, 8, 9, 0, time.UTC), "17:08:09 UTC today"},
		{time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC), "06:00 UTC tomorrow"},
		{time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC), "22:00 UTC yesterday"},
		{time.Date(2026, 12, 24, 9, 30, 0, 0, time.UTC), "Thu 24 Dec 09:30 UTC"},
		{time.Date(2027, 1, 2, 9, 30, 0, 0, time.UTC), "Sat 2 Jan 2027 09:30 UTC"},
		// Another zone is said in UTC, once.
		{time.Date(2026, 11, 28, 18, 8, 9, 0, time.FixedZone("CET", 3600)), "17:08:09 UTC today"},
	} {
		if got := At(c.t, now); got != c.want {
			t.Errorf("At(%v) = %q, want %q", c.t, got, c.want)
		}
	}
	if got := Until(now.Add(2*time.Minute+9*time.Second), now); got != "at 17:08:09 UTC today (in 2 minutes 9 seconds)" {
		t.Errorf("Until = %q", got)
	}
	if got := Until(now.Add(-time.Second), now); got != "now" {
		t.Errorf("Until past = %q", got)
	}
	if got := Stamp(now); got != "Sat 28 Nov 2026 17:06:00 UTC" {
		t.Errorf("Stamp = %q", got)
	}
}

func TestCompleted(t *testing.T) {
	for n, want := range map[int]string{0: "completed", 1: "completed with 1 step skipped", 2: "completed with 2 steps skipped"} {
		if got := Completed(n); got != want {
			t.Errorf("Completed(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestExample(t *testing.T) {
	for pat, want := range map[string]string{
		`^\d+\.\d+\.\d+$`:                  "1.2.3",
		`^v[0-9]+\.[0-9]+$`:                "v1.2",
		`^[a-z][a-z0-9-]{0,30}$`:           "a",
		`^(staging|production)$`:           "staging",
		`^[A-Z]{3}-\d{2}$`:                 "AAA-12",
		`^(?i)rel-\d+$`:                    "rel-1",
		`^[0-9]+(\.[0-9]+)*(-[a-z0-9]+)?$`: "1",
		`(`:                                "", // invalid
		`^[^\x00-\x{10FFFF}]$`:             "", // nothing matches
	} {
		if got := Example(pat); got != want {
			t.Errorf("Example(%q) = %q, want %q", pat, got, want)
		}
	}
}

func TestOutcome(t *testing.T) {
	for _, c := range []struct {
		state, err string
		skipped    int
		want       string
	}{
		{"completed", "", 0, "completed"},
		{"completed", "", 1, "completed with 1 step skipped"},
		{"cancelled", "deploy to production rejected by pat@acme.test", 0, "rejected"},
		{"cancelled", "approval of deploy rejected by pat@acme.test", 0, "rejected"},
		{"cancelled", "cancelled by pat@acme.test", 0, "cancelled"},
		{"failed", "x rejected by y", 0, "failed"}, // only a cancel is a rejection
		{"awaiting_approval", "", 0, "awaiting approval"},
	} {
		if got := Outcome(c.state, c.err, c.skipped); got != c.want {
			t.Errorf("Outcome(%q, %q, %d) = %q, want %q", c.state, c.err, c.skipped, got, c.want)
		}
	}
}

func TestRecurring(t *testing.T) {
	for _, c := range []struct {
		weekly bool
		from   int
		text   string
		want   string
	}{
		{false, 22 * 60, "22:00–06:00", "nightly 22:00–06:00, every day"},
		{false, 2 * 60, "02:00–03:00 UTC", "nightly 02:00–03:00 UTC, every day"},
		{false, 12 * 60, "12:00–13:00", "daytime 12:00–13:00, every day"},
		{true, 5*24*60 + 16*60, "Fri 16:00–Mon 08:00 Europe/Berlin", "Fri 16:00–Mon 08:00 Europe/Berlin, every week"},
	} {
		if got := Recurring(c.weekly, c.from, c.text); got != c.want {
			t.Errorf("Recurring(%v, %d, %q) = %q, want %q", c.weekly, c.from, c.text, got, c.want)
		}
	}
}
