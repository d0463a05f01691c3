package handlers

import "testing"

// TestCanarySplitIsExact: a canary of weight w gets w of any 100
// consecutive requests, give or take one, and hosts count apart. A coin
// toss per request fails this (a 20 % canary got 9 of 100 in an e2e run,
// and its analysis failed for want of requests).
func TestCanarySplitIsExact(t *testing.T) {
	t.Parallel()
	for _, weight := range []int{1, 5, 20, 33, 50, 77, 99} {
		rc := newLocalRouteCache()
		got := make([]bool, 400)
		for i := range got {
			got[i] = rc.toCanary("shop.staging", weight)
			rc.toCanary("other.staging", 50) // another route's requests do not move this one's
		}
		for start := 0; start+100 <= len(got); start++ {
			n := 0
			for _, c := range got[start : start+100] {
				if c {
					n++
				}
			}
			if n < weight-1 || n > weight+1 {
				t.Fatalf("weight %d: %d of the 100 requests from %d went to the canary", weight, n, start)
			}
		}
	}
	rc := newLocalRouteCache()
	for range 10 {
		if rc.toCanary("h", 0) || !rc.toCanary("h", 100) {
			t.Fatal("weight 0 sends nothing to the canary and 100 everything")
		}
	}
}
