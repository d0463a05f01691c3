package local

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"flightdeck/store"
	"flightdeck/workflow/action"
)

// Bounds of with.interval.
const (
	monitorIntervalMin = 10 * time.Millisecond
	monitorIntervalMax = 24 * time.Hour
)

// monitorCreate adds a health monitor for the host (with.interval, default
// MonitorInterval); as monitor_delete's compensation it puts back the
// monitor that was deleted.
func (p *Provider) monitorCreate(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	h, err := host(in, false)
	if err != nil {
		return nil, err
	}
	interval := p.cfg.MonitorInterval
	if in.Compensating {
		var prev store.LocalMonitorChange
		ok, err := previous(in, &prev)
		if err != nil {
			return nil, err
		}
		if !ok || !prev.Deleted {
			in.Log("Monitor of " + h + " was not deleted; nothing to restore")
			return store.LocalMonitorChange{Host: h}, nil
		}
		interval = time.Duration(prev.IntervalMS) * time.Millisecond
	} else if v, ok := in.With["interval"]; ok {
		s, ok := v.(string)
		d, err := time.ParseDuration(s)
		if !ok || err != nil || d < monitorIntervalMin || d > monitorIntervalMax {
			return nil, &action.Permanent{Err: fmt.Errorf("with.interval: want a duration between %s and %s like 30s, got %v",
				monitorIntervalMin, monitorIntervalMax, v)}
		}
		interval = d
	}
	ch, err := p.st.LocalMonitorCreate(ctx, in.Team, h, interval, eff)
	if err != nil {
		return nil, fmt.Errorf("monitor of %s: %w", h, err)
	}
	if ch.Created {
		in.Log(fmt.Sprintf("Monitoring %s every %s", h, time.Duration(ch.IntervalMS)*time.Millisecond))
	} else {
		in.Log("Monitor of " + h + " exists already; left as it is")
	}
	return ch, nil
}

// monitorDelete removes the host's monitor; as monitor_create's
// compensation, only a monitor monitor_create made.
func (p *Provider) monitorDelete(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	h, err := host(in, false)
	if err != nil {
		return nil, err
	}
	if in.Compensating {
		var prev store.LocalMonitorChange
		ok, err := previous(in, &prev)
		if err != nil {
			return nil, err
		}
		if !ok || !prev.Created {
			in.Log("Monitor of " + h + " existed before this task; left as it is")
			return store.LocalMonitorChange{Host: h}, nil
		}
	}
	ch, err := p.st.LocalMonitorDelete(ctx, in.Team, h, eff)
	if err != nil {
		return nil, fmt.Errorf("monitor of %s: %w", h, err)
	}
	if ch.Deleted {
		in.Log("Monitor of " + h + " deleted")
	} else {
		in.Log("Monitor of " + h + " did not exist")
	}
	return ch, nil
}

// RunMonitors probes due monitors every MonitorTick until ctx ends. Any
// number of serve processes may run it: claiming is SKIP LOCKED.
func (p *Provider) RunMonitors(ctx context.Context) error {
	tick := time.NewTicker(p.cfg.MonitorTick)
	defer tick.Stop()
	for {
		if _, err := p.CheckMonitors(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("Monitor round failed", "error", err)
		}
		if _, err := p.StopReplaced(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("Stopping replaced instances failed", "error", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// CheckMonitors runs one round: claims due monitors, probes each route's
// current instance and records the result. It returns how many it probed.
func (p *Provider) CheckMonitors(ctx context.Context) (int, error) {
	due, err := p.st.LocalMonitorClaimDue(ctx, 100)
	if err != nil {
		return 0, err
	}
	for _, m := range due {
		healthy, msg := true, ""
		switch {
		case m.Target.InstanceID == "":
			healthy, msg = false, "no running instance serves "+m.Host
		default:
			code, body, err := probe(ctx, m.Target.Port)
			switch {
			case err != nil:
				healthy, msg = false, fmt.Sprintf("version %s does not answer: %s", m.Target.Version, err)
			case code != http.StatusOK:
				healthy, msg = false, fmt.Sprintf("version %s /healthz answered %d %s", m.Target.Version, code, body)
			}
		}
		changed, err := p.st.LocalMonitorRecord(ctx, m.MonitorID, healthy, msg)
		if errors.Is(err, store.ErrNotFound) {
			continue // deleted meanwhile
		}
		if err != nil {
			return 0, err
		}
		if changed && healthy {
			p.log.Info("Alert resolved", "host", m.Host)
		} else if changed {
			p.log.Warn("Alert opened", "host", m.Host, "reason", msg)
		}
	}
	return len(due), nil
}

// StopReplaced stops this node's instances that a promoted canary replaced
// once the promoting task completed (contract §11: until then an undo can
// return to them). It returns how many it stopped.
func (p *Provider) StopReplaced(ctx context.Context) (int, error) {
	old, err := p.st.LocalInstanceListReplaced(ctx, p.node)
	if err != nil {
		return 0, err
	}
	for _, o := range old {
		p.stop(o.PID, o.ID)
		if err := p.st.LocalInstanceSetProcess(ctx, o.ID, o.PID, o.Port, "stopped"); err != nil {
			return 0, err
		}
		p.log.Info("Stopped the instance a promoted canary replaced", "instance_id", o.ID, "host", o.Host, "version", o.Version)
	}
	return len(old), nil
}
