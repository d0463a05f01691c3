// Package rollup works the dashboard's figures out of the stored rollup
// rows (store.TaskRollupList): pure functions, no SQL, so the page, its
// socket and the tests read them alike.
package rollup

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/task"
)

// BucketUpper is the longest run time of rollup bucket b: bucket 0 holds
// up to 1 ms, bucket b up to 2^(b/4) ms (store.msBucket).
func BucketUpper(b int) time.Duration {
	if b <= 0 {
		return time.Millisecond
	}
	return time.Duration(math.Pow(2, float64(b)/4) * float64(time.Millisecond))
}

// RunTime is how long one pipeline's completed tasks ran, time waiting for
// people left out (shown apart as MeanWaited).
type RunTime struct {
	Pipeline       string // "" for agent tasks
	Runs           int
	P50, P95, Mean time.Duration
	MeanWaited     time.Duration
}

// RunTimesOf gives each pipeline's run times over the completed tasks of
// rs that ended on or after since's UTC day. Percentiles are interpolated
// within their bucket (within 19%); the mean is exact.
func RunTimesOf(rs []store.Rollup, since time.Time) []RunTime {
	first := task.UTCDay(since)
	hist := map[string]map[int]int{}
	sums := map[string]*RunTime{}
	ms, waited := map[string]int64{}, map[string]int64{}
	for _, r := range rs {
		if r.Outcome != store.OutcomeCompleted || r.Day.Before(first) {
			continue
		}
		rt := sums[r.Pipeline]
		if rt == nil {
			rt = &RunTime{Pipeline: r.Pipeline}
			sums[r.Pipeline], hist[r.Pipeline] = rt, map[int]int{}
		}
		rt.Runs += r.Tasks
		hist[r.Pipeline][r.Bucket] += r.Tasks
		ms[r.Pipeline] += r.Ms
		waited[r.Pipeline] += r.WaitedMs
	}
	out := make([]RunTime, 0, len(sums))
	for name, rt := range sums {
		rt.P50, rt.P95 = percentile(hist[name], rt.Runs, 0.5), percentile(hist[name], rt.Runs, 0.95)
		rt.Mean = time.Duration(ms[name]/int64(rt.Runs)) * time.Millisecond
		rt.MeanWaited = time.Duration(waited[name]/int64(rt.Runs)) * time.Millisecond
		out = append(out, *rt)
	}
	slices.SortFunc(out, func(a, b RunTime) int { return cmp.Compare(a.Pipeline, b.Pipeline) })
	return out
}

// percentile reads the p-th percentile of n run times off a histogram of
// buckets, interpolating linearly within the bucket it falls in.
func percentile(hist map[int]int, n int, p float64) time.Duration {
	want := p * float64(n)
	seen := 0
	for _, b := range slices.Sorted(maps.Keys(hist)) {
		c := hist[b]
		if float64(seen+c) >= want {
			lo := time.Duration(0)
			if b > 0 {
				lo = BucketUpper(b - 1)
			}
			hi := BucketUpper(b)
			return (lo + time.Duration((want-float64(seen))/float64(c)*float64(hi-lo))).Round(time.Millisecond)
		}
		seen += c
	}
	return 0
}

// DeployHealth is the DORA view of one deploy pipeline: its deploys that
// ended (completed or failed; cancelled ones are a person's choice and
// counted apart), the failed ones (change failures), and the targets it
// restored after failing, with the mean time from the first failure to
// the success that restored.
type DeployHealth struct {
	Pipeline                     string
	Deploys, Failures, Cancelled int
	Restores                     int
	MeanTimeToRestore            time.Duration
}

// ChangeFailureRate is Failures / Deploys (0 with no deploys).
func (d DeployHealth) ChangeFailureRate() float64 {
	if d.Deploys == 0 {
		return 0
	}
	return float64(d.Failures) / float64(d.Deploys)
}

// DeployHealthOf gives the DORA figures of every pipeline that deploys
// (pipeline.Pipeline.Deploys, asked through deploys) over the rows of rs
// from since's UTC day on; other pipelines and agent tasks have none.
func DeployHealthOf(rs []store.Rollup, since time.Time, deploys func(pipeline string) bool) []DeployHealth {
	first := task.UTCDay(since)
	by := map[string]*DeployHealth{}
	restoreMs := map[string]int64{}
	for _, r := range rs {
		if r.Pipeline == "" || r.Day.Before(first) || !deploys(r.Pipeline) {
			continue
		}
		d := by[r.Pipeline]
		if d == nil {
			d = &DeployHealth{Pipeline: r.Pipeline}
			by[r.Pipeline] = d
		}
		switch r.Outcome {
		case store.OutcomeCompleted:
			d.Deploys += r.Tasks
		case store.OutcomeFailed:
			d.Deploys += r.Tasks
			d.Failures += r.Tasks
		case store.OutcomeCancelled:
			d.Cancelled += r.Tasks
		case store.OutcomeRestored:
			d.Restores += r.Tasks
			restoreMs[r.Pipeline] += r.Ms
		}
	}
	out := make([]DeployHealth, 0, len(by))
	for _, d := range by {
		if d.Restores > 0 {
			d.MeanTimeToRestore = time.Duration(restoreMs[d.Pipeline]/int64(d.Restores)) * time.Millisecond
		}
		out = append(out, *d)
	}
	slices.SortFunc(out, func(a, b DeployHealth) int { return cmp.Compare(a.Pipeline, b.Pipeline) })
	return out
}

// DayCount is how many tasks ended on one UTC day, by outcome.
type DayCount struct {
	Day                          time.Time
	Completed, Failed, Cancelled int
}

// DailyOf counts the tasks of rs that ended on each of the days UTC days
// from first's, every day present whether any task ended or not.
func DailyOf(rs []store.Rollup, first time.Time, days int) []DayCount {
	first = task.UTCDay(first)
	out := make([]DayCount, days)
	for i := range out {
		out[i].Day = first.AddDate(0, 0, i)
	}
	for _, r := range rs {
		i := int(r.Day.Sub(first) / (24 * time.Hour))
		if r.Day.Before(first) || i >= days {
			continue
		}
		switch r.Outcome {
		case store.OutcomeCompleted:
			out[i].Completed += r.Tasks
		case store.OutcomeFailed:
			out[i].Failed += r.Tasks
		case store.OutcomeCancelled:
			out[i].Cancelled += r.Tasks
		}
	}
	return out
}
