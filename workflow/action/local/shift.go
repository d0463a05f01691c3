package local

import (
	"context"
	"errors"
	"fmt"
	"math"

	"flightdeck/store"
	"flightdeck/workflow/action"
)

// trafficShift sets the share of the route's requests its canary receives
// (with.weight, 0–100); at 100 the canary becomes the current instance.
// As a compensation (no with needed) it puts back the share and the
// current instance the forward step found, read from its output.
func (p *Provider) trafficShift(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	if in.Compensating {
		var sh store.LocalShift
		ok, err := previous(in, &sh)
		if err != nil {
			return nil, err
		}
		if !ok {
			in.Log("The shift never happened; nothing to undo")
			return store.LocalShift{}, nil
		}
		if err := p.st.LocalTrafficRestore(ctx, sh, eff); err != nil {
			return nil, err
		}
		in.Log(fmt.Sprintf("Route %s: canary %s back to %d %% of the requests", sh.Host, sh.Version, sh.PreviousWeight))
		return sh, nil
	}
	h, err := host(in, false)
	if err != nil {
		return nil, err
	}
	if _, ok := in.With["weight"]; !ok {
		return nil, &action.Permanent{Err: errors.New("with.weight is missing: the canary's share, 0 to 100")}
	}
	weight, err := weightOf(in, 0)
	if err != nil {
		return nil, err
	}
	sh, err := p.st.LocalTrafficShift(ctx, in.Team, h, weight, eff)
	if errors.Is(err, store.ErrNoCanary) || errors.Is(err, store.ErrInvalid) {
		return nil, &action.Permanent{Err: err}
	}
	if err != nil {
		return nil, err
	}
	if sh.Promoted {
		in.Log(fmt.Sprintf("Route %s: canary %s now serves every request; the instance it replaced stays for an undo", h, sh.Version))
	} else {
		in.Log(fmt.Sprintf("Route %s: canary %s receives %d %% of the requests (was %d %%)", h, sh.Version, sh.Weight, sh.PreviousWeight))
	}
	return sh, nil
}

// weightOf reads with.weight, a whole number from 0 to 100 (def when absent).
func weightOf(in action.Input, def int) (int, error) {
	v, ok := in.With["weight"]
	if !ok {
		return def, nil
	}
	w, ok := Weight(v)
	if !ok {
		return 0, &action.Permanent{Err: fmt.Errorf("with.weight: want a whole number from 0 to 100, got %v", v)}
	}
	return w, nil
}

// Weight reads a share of traffic as the YAML or a template gives it (a
// number or a string of one): a whole number from 0 to 100.
func Weight(v any) (int, bool) {
	var f float64
	switch x := v.(type) {
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case uint64:
		f = float64(x)
	case float64:
		f = x
	case string:
		var n int
		if _, err := fmt.Sscanf(x, "%d", &n); err != nil || fmt.Sprint(n) != x {
			return 0, false
		}
		f = float64(n)
	default:
		return 0, false
	}
	if f != math.Trunc(f) || f < 0 || f > 100 {
		return 0, false
	}
	return int(f), true
}
