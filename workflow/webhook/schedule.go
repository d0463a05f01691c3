package webhook

import (
	"time"

	"flightdeck/internal/backoff"
)

// Schedule is the retry backoff of deliveries. Zero fields take the
// defaults: about 5 s, 30 s, 2 min, 10 min, 1 h, then every 6 h, for up to
// 3 days, each delay jittered like every retry (backoff.Jitter, ±20 %).
type Schedule struct {
	Steps  []time.Duration // delays after attempts 1, 2, …
	Every  time.Duration   // delay once Steps are used up
	MaxAge time.Duration   // no retry is scheduled past this age of a delivery
}

// Schedule defaults.
var (
	ScheduleStepsDefault = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour}
)

const (
	ScheduleEveryDefault  = 6 * time.Hour
	ScheduleMaxAgeDefault = 72 * time.Hour
)

func (s Schedule) withDefaults() Schedule {
	if len(s.Steps) == 0 {
		s.Steps = ScheduleStepsDefault
	}
	if s.Every <= 0 {
		s.Every = ScheduleEveryDefault
	}
	if s.MaxAge <= 0 {
		s.MaxAge = ScheduleMaxAgeDefault
	}
	return s
}

// Delay is the wait after failed attempt n (1-based), jittered.
func (s Schedule) Delay(n int) time.Duration {
	s = s.withDefaults()
	d := s.Every
	if n >= 1 && n <= len(s.Steps) {
		d = s.Steps[n-1]
	}
	return backoff.Jitter(d)
}
