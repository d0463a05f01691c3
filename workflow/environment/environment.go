// Package environment holds the protection rules of environments
// (environments.yaml, contract §9) and the pure decisions made with them:
// whether a time falls in a freeze and until when, whether a version may
// go to an environment, whether a promotion's soak is met. It imports the
// standard library only; pipeline reads the file into these types and the
// submit, the saga and the pages ask these functions.
package environment

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"time"

	"flightdeck/internal/words"
	"flightdeck/workflow/task"
)

// Defaults of the rules.
const (
	ReviewersTimeoutDefault = 24 * time.Hour
	// MaxRunAhead bounds a submit's run_at.
	MaxRunAhead = 30 * 24 * time.Hour
)

// ReviewerRolesDefault are who may review when a rule names none.
var ReviewerRolesDefault = task.DefaultDeciders()

// Rules are the environments' rules by name; the zero value (no file)
// protects nothing.
type Rules struct {
	byName map[string]*Env
	names  []string
}

// NewRules indexes envs by name.
func NewRules(envs ...*Env) *Rules {
	r := &Rules{byName: map[string]*Env{}}
	for _, e := range envs {
		if _, seen := r.byName[e.Name]; !seen {
			r.names = append(r.names, e.Name)
		}
		r.byName[e.Name] = e
	}
	sort.Strings(r.names)
	return r
}

// Get returns the rules of an environment; nil when it has none. A nil
// *Rules has none for any.
func (r *Rules) Get(name string) *Env {
	if r == nil {
		return nil
	}
	return r.byName[name]
}

// All returns every environment with rules, by name.
func (r *Rules) All() []*Env {
	if r == nil {
		return nil
	}
	out := make([]*Env, len(r.names))
	for i, n := range r.names {
		out[i] = r.byName[n]
	}
	return out
}

// Env is one environment's rules.
type Env struct {
	Name      string
	PromoteTo string     // "" for none
	Reviewers *Reviewers // nil: no reviewers
	Wait      time.Duration
	// Versions, if set, is what the version param must match.
	Versions *regexp.Regexp
	Requires *Requires
	Freeze   []Window
	// OnFailure is "ask" (guided failure, contract §10) or "" (roll back).
	OnFailure string
}

// Reviewers are the people who approve a deploy before its first step.
type Reviewers struct {
	Count   int
	Roles   []string
	Timeout time.Duration
}

// Requires is the promotion gate: the same version completed in Env at
// least Soak before the submit.
type Requires struct {
	Env  string
	Soak time.Duration
}

// Window is a recurring freeze: weekly ("Fri 16:00" to "Mon 08:00") or
// daily ("22:00" to "06:00"), in a time zone, across midnight and weekends.
type Window struct {
	Weekly bool
	// From and To are minutes from the start of the period: the week
	// (Sunday 00:00) when Weekly, else the day.
	From, To int
	Loc      *time.Location
	Reason   string
	// Text is the window as written, for pages ("Fri 16:00–Mon 08:00 Europe/Berlin").
	Text string
}

// Span is one freeze in time: a window's occurrence or a freeze made
// through the API (ID set).
type Span struct {
	ID     string
	From   time.Time
	Until  time.Time
	Reason string
	Source string // rule | api
}

var days = []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}

// ParseWindow reads a window's from and to ("Fri 16:00" or "16:00", both
// of one form) in tz ("" is UTC).
func ParseWindow(from, to, tz, reason string) (Window, error) {
	loc := time.UTC
	if tz != "" {
		var err error
		if loc, err = time.LoadLocation(tz); err != nil {
			return Window{}, fmt.Errorf("unknown time zone %q", tz)
		}
	}
	f, fw, err := parseWeekTime(from)
	if err != nil {
		return Window{}, fmt.Errorf("from: %w", err)
	}
	t, tw, err := parseWeekTime(to)
	if err != nil {
		return Window{}, fmt.Errorf("to: %w", err)
	}
	if fw != tw {
		return Window{}, fmt.Errorf("from %q and to %q must both name a day or neither", from, to)
	}
	if f == t {
		return Window{}, fmt.Errorf("from and to are the same time: the window would be empty")
	}
	text := from + "–" + to
	if tz != "" {
		text += " " + tz
	}
	return Window{Weekly: fw, From: f, To: t, Loc: loc, Reason: reason, Text: text}, nil
}

// parseWeekTime reads "Fri 16:00" (weekly: minutes from Sunday 00:00) or
// "16:00" (minutes from midnight).
func parseWeekTime(s string) (int, bool, error) {
	day := -1
	clock := s
	if len(s) > 4 && s[3] == ' ' {
		day = slices.Index(days, s[:3])
		if day < 0 {
			return 0, false, fmt.Errorf("%q: the day must be one of Mon, Tue, Wed, Thu, Fri, Sat, Sun", s)
		}
		clock = s[4:]
	}
	t, err := time.Parse("15:04", clock)
	if err != nil || len(clock) != 5 {
		return 0, false, fmt.Errorf("%q is not a time like \"Fri 16:00\" or \"22:00\"", s)
	}
	m := t.Hour()*60 + t.Minute()
	if day < 0 {
		return m, false, nil
	}
	return day*24*60 + m, true, nil
}

func (w Window) periodDays() int {
	if w.Weekly {
		return 7
	}
	return 1
}

// length is the window's length in wall-clock minutes (to may come
// "before" from: the window runs across midnight or the weekend).
func (w Window) length() int {
	period := w.periodDays() * 24 * 60
	return ((w.To-w.From)%period + period) % period
}

// wall is the time days and minutes after midnight of (y, m, d) in loc,
// counted on the wall clock (a DST change moves it, as people read it).
func wall(y int, m time.Month, d, addDays, minutes int, loc *time.Location) time.Time {
	return time.Date(y, m, d+addDays+minutes/(24*60), 0, minutes%(24*60), 0, 0, loc)
}

// occurrence is the window's occurrence that starts at the latest at t
// (from <= t), counted in the window's time zone.
func (w Window) occurrence(t time.Time) Span {
	local := t.In(w.Loc)
	y, m, d := local.Date()
	back := 0
	if w.Weekly {
		back = int(local.Weekday()) // to the week's Sunday
	}
	start := wall(y, m, d, -back, w.From, w.Loc)
	if start.After(t) {
		start = wall(y, m, d, -back-w.periodDays(), w.From, w.Loc)
	}
	sy, sm, sd := start.Date()
	end := wall(sy, sm, sd, 0, start.Hour()*60+start.Minute()+w.length(), w.Loc)
	return Span{From: start.UTC(), Until: end.UTC(), Reason: w.Reason, Source: "rule"}
}

// Between lists the occurrences of w that overlap [from, to), in order.
func (w Window) Between(from, to time.Time) []Span {
	var out []Span
	s := w.occurrence(from)
	for i := 0; i < 1000 && s.From.Before(to); i++ {
		if s.Until.After(from) {
			out = append(out, s)
		}
		// a period and two hours on is past the next start (a DST
		// change moves it by an hour) and before the one after it
		s = w.occurrence(s.From.Add(time.Duration(w.periodDays())*24*time.Hour + 2*time.Hour))
	}
	return out
}

// Freezes are e's recurring windows' occurrences overlapping [from, to)
// and the spans of api that do, sorted by start.
func (e *Env) Freezes(api []Span, from, to time.Time) []Span {
	var out []Span
	if e != nil {
		for _, w := range e.Freeze {
			out = append(out, w.Between(from, to)...)
		}
	}
	for _, s := range api {
		if s.From.Before(to) && s.Until.After(from) {
			out = append(out, s)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].From.Before(out[j].From) })
	return out
}

// Frozen reports whether at is inside a freeze of e (a recurring window)
// or one of api, and if so the freeze that holds it: its reason and the
// time the environment is free again, following freezes that overlap or
// touch one another to the end of the last. e may be nil (an environment
// without rules can still be frozen through the API).
func (e *Env) Frozen(api []Span, at time.Time) (Span, bool) {
	var hold Span
	found := false
	cur := at
	for range 100 {
		moved := false
		for _, s := range e.Freezes(api, cur, cur.Add(time.Nanosecond)) {
			if !s.From.After(cur) && s.Until.After(cur) {
				if !found {
					hold, found = s, true
				}
				if s.Until.After(hold.Until) {
					hold.Until = s.Until
				}
				if s.Until.After(cur) {
					cur, moved = s.Until, true
				}
			}
		}
		if !moved {
			break
		}
	}
	return hold, found
}

// VersionOK reports whether version may go to e.
func (e *Env) VersionOK(version string) bool {
	return e == nil || e.Versions == nil || e.Versions.MatchString(version)
}

// PromotionCheck decides e's promotion gate for a submit at now: the same
// version (and target) last completed in the required environment at
// completedAt (nil: never). When the gate is not met it says why in words
// a person understands.
func (e *Env) PromotionCheck(version string, completedAt *time.Time, now time.Time) (ok bool, why string) {
	if e == nil || e.Requires == nil {
		return true, ""
	}
	r := e.Requires
	if completedAt == nil {
		return false, fmt.Sprintf("%s requires version %s to complete in %s first; it never did", e.Name, version, r.Env)
	}
	ready := completedAt.Add(r.Soak)
	if now.Before(ready) {
		return false, fmt.Sprintf("%s requires version %s to soak in %s for %s: it completed there at %s, so it may go on %s",
			e.Name, version, r.Env, words.Duration(r.Soak), words.At(*completedAt, now), words.Until(ready, now))
	}
	return true, ""
}
