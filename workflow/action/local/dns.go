package local

import (
	"context"
	"fmt"

	"flightdeck/store"
	"flightdeck/workflow/action"
)

// dnsCreate adds the route; as a compensation it puts back a route that
// dns_delete removed, with the instance it had.
func (p *Provider) dnsCreate(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	h, err := host(in, false)
	if err != nil {
		return nil, err
	}
	instanceID := ""
	if in.Compensating {
		var prev store.LocalRouteChange
		ok, err := previous(in, &prev)
		if err != nil {
			return nil, err
		}
		if !ok || !prev.Deleted {
			in.Log("Route " + h + " was not deleted; nothing to restore")
			return store.LocalRouteChange{Host: h}, nil
		}
		instanceID = prev.InstanceID
	}
	ch, err := p.st.LocalRouteCreate(ctx, in.Team, h, instanceID, eff)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", h, err)
	}
	if ch.Created {
		in.Log(fmt.Sprintf("Route %s created: requests for %s.localhost now reach it", h, h))
	} else {
		in.Log("Route " + h + " exists already; left as it is")
	}
	return ch, nil
}

// dnsDelete removes the route; as dns_create's compensation it removes
// only a route that dns_create made.
func (p *Provider) dnsDelete(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	h, err := host(in, false)
	if err != nil {
		return nil, err
	}
	if in.Compensating {
		var prev store.LocalRouteChange
		ok, err := previous(in, &prev)
		if err != nil {
			return nil, err
		}
		if !ok || !prev.Created {
			in.Log("Route " + h + " existed before this task; left as it is")
			return store.LocalRouteChange{Host: h}, nil
		}
	}
	ch, err := p.st.LocalRouteDelete(ctx, in.Team, h, eff)
	if err != nil {
		return nil, fmt.Errorf("route %s: %w", h, err)
	}
	if ch.Deleted {
		in.Log("Route " + h + " deleted")
	} else {
		in.Log("Route " + h + " did not exist")
	}
	return ch, nil
}
