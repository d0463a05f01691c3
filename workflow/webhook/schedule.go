package webhook

import (
	"math/rand/v2"
	"time"
)

// Schedule is the retry backoff of deliveries. Zero fields take the
// defaults: about 5 s, 30 s, 2 min, 10 min, 1 h, then every 6 h, for up to
// 3 days, each delay jittered by ±20 %.
type Schedule struct {
	Steps  []time.Duration // delays after attempts 1, 2, …
	Every  time.Duration   // delay once Steps are used up
	MaxAge time.Duration   // no retry is scheduled past this age of a delivery
	Jitter float64         // fraction, 0..1; negative means none
}

// Schedule defaults.
var (
	ScheduleStepsDefault = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute, time.Hour}
)

const (
	ScheduleEveryDefault  = 6 * time.Hour
	ScheduleMaxAgeDefault = 72 * time.Hour
	ScheduleJitterDefault = 0.2
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
	if s.Jitter == 0 {
		s.Jitter = ScheduleJitterDefault
	}
	if s.Jitter < 0 {
		s.Jitter = 0
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
	if s.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + s.Jitter*(2*rand.Float64()-1)))
	}
	return max(d, 0)
}
