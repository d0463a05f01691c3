package local

import (
	"context"
	"errors"
	"fmt"

	"flightdeck/store"
	"flightdeck/workflow/action"
)

// instanceStart starts the demo app at with.version behind the host's
// route and makes it current once healthy. The instance row is written
// before the process exists and carries the step's key, so a re-run after a
// crash finds it, stops whatever process the earlier attempt left, and
// starts one afresh.
func (p *Provider) instanceStart(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	if in.Compensating {
		return nil, &action.Permanent{Err: errors.New("local.instance_start cannot undo a step; use local.instance_stop as instance_start's compensation")}
	}
	h, err := host(in, false)
	if err != nil {
		return nil, err
	}
	v, ok := in.With["version"].(string)
	if !ok || !versionRE.MatchString(v) {
		return nil, &action.Permanent{Err: fmt.Errorf("with.version: want a version like 1.2.3 ([0-9A-Za-z.+-], 1 to 40), got %v", in.With["version"])}
	}
	weight, err := weightOf(in, 100)
	if err != nil {
		return nil, err
	}
	inst, err := p.st.LocalInstanceBegin(ctx, store.LocalInstanceBeginParams{Team: in.Team, Host: h, Version: v, Node: p.node, Key: in.IdempotencyKey})
	if err != nil {
		return nil, err
	}
	// An earlier attempt may have left a process, recorded or not.
	for _, pid := range instancePIDs(inst.ID) {
		in.Log(fmt.Sprintf("Stopping process %d left by an earlier attempt", pid))
		p.stop(pid, inst.ID)
	}
	in.Log(fmt.Sprintf("Starting demo app %s for %s", v, h))
	pid, port, err := p.spawn(ctx, inst.ID, v)
	if err != nil {
		_ = p.st.LocalInstanceSetProcess(context.WithoutCancel(ctx), inst.ID, 0, 0, "failed")
		return nil, err
	}
	// Recorded at once so a crash from here on leaves a findable process.
	if err := p.st.LocalInstanceSetProcess(ctx, inst.ID, pid, port, "starting"); err != nil {
		p.stop(pid, inst.ID)
		return nil, err
	}
	in.Log(fmt.Sprintf("Process %d listening on 127.0.0.1:%d; waiting for /healthz", pid, port))
	if err := p.waitHealthy(ctx, pid, port); err != nil {
		p.stop(pid, inst.ID)
		_ = p.st.LocalInstanceSetProcess(context.WithoutCancel(ctx), inst.ID, pid, port, "failed")
		in.Log("Version " + v + " is not healthy; stopped it, the route is unchanged")
		return nil, fmt.Errorf("version %s: %w", v, err)
	}
	act, stale, err := p.st.LocalInstanceActivate(ctx, inst.ID, weight, eff)
	if err != nil {
		p.stop(pid, inst.ID)
		_ = p.st.LocalInstanceSetProcess(context.WithoutCancel(ctx), inst.ID, pid, port, "failed")
		return nil, err
	}
	switch {
	case act.Canary:
		in.Log(fmt.Sprintf("Version %s is the canary of %s with %d %% of its requests; instance %s serves the rest", v, h, act.Weight, act.PreviousID))
	case act.PreviousID != "":
		in.Log(fmt.Sprintf("Version %s now serves %s (instance %s stays as standby for an undo)", v, h, act.PreviousID))
	default:
		in.Log(fmt.Sprintf("Version %s now serves %s", v, h))
	}
	for _, o := range stale {
		p.stop(o.PID, o.ID)
		if err := p.st.LocalInstanceSetProcess(ctx, o.ID, o.PID, o.Port, "stopped"); err != nil {
			p.log.Warn("Could not mark an old instance stopped", "instance_id", o.ID, "error", err)
		}
		in.Log(fmt.Sprintf("Stopped old instance %s (version %s)", o.ID, o.Version))
	}
	return act, nil
}

// instanceStop, as instance_start's compensation: make the previous
// instance current again (restarting it if its process is gone), then stop
// the new one. The route moves before the process stops, so requests never
// meet a stopped instance; a re-run repeats each part harmlessly.
func (p *Provider) instanceStop(ctx context.Context, in action.Input, eff store.LocalEffect) (any, error) {
	if !in.Compensating {
		return nil, &action.Permanent{Err: errors.New("local.instance_stop is local.instance_start's compensation; it cannot run as a step of its own")}
	}
	var prev store.LocalActivation
	ok, err := previous(in, &prev)
	if err != nil {
		return nil, err
	}
	var inst *store.LocalInstance
	if ok && prev.InstanceID != "" {
		inst, err = p.st.LocalInstanceGet(ctx, prev.InstanceID)
	} else {
		// The start never completed (compensate_on_failure): undo whatever
		// it left, found by its key.
		inst, err = p.st.LocalInstanceGetByKey(ctx, forwardKey(in))
	}
	if errors.Is(err, store.ErrNotFound) {
		in.Log("No instance was started; nothing to stop")
		return store.LocalStop{}, nil
	}
	if err != nil {
		return nil, err
	}
	stop := store.LocalStop{InstanceID: inst.ID, Host: inst.Host, Version: inst.Version}
	// A canary leaves the route first: the current instance takes its share.
	if err := p.st.LocalRouteDropCanary(ctx, inst.Host, inst.ID); err != nil {
		return nil, err
	}
	if inst.PreviousID != nil {
		old, err := p.st.LocalInstanceGet(ctx, *inst.PreviousID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		if old != nil {
			if err := p.ensureRunning(ctx, old); err != nil {
				return nil, fmt.Errorf("restarting previous version %s: %w", old.Version, err)
			}
			stop.RestoredID = old.ID
		}
	}
	if err := p.st.LocalRouteSwitch(ctx, inst.Host, inst.ID, stop.RestoredID); err != nil {
		return nil, err
	}
	if stop.RestoredID != "" {
		in.Log(fmt.Sprintf("Route %s serves the previous instance %s again", inst.Host, stop.RestoredID))
	} else {
		in.Log(fmt.Sprintf("Route %s has no instance now (503)", inst.Host))
	}
	p.stop(inst.PID, inst.ID)
	if err := p.st.LocalInstanceStopped(ctx, stop, eff); err != nil {
		return nil, err
	}
	in.Log(fmt.Sprintf("Stopped instance %s (version %s)", inst.ID, inst.Version))
	return stop, nil
}

// ensureRunning restarts inst's process unless it is alive. Two processes
// restarting the same instance at once: the conditional pid update lets one
// win; the loser stops its own process.
func (p *Provider) ensureRunning(ctx context.Context, inst *store.LocalInstance) error {
	if inst.State == "running" && ours(inst.PID, inst.ID) {
		return nil
	}
	if inst.Node != p.node {
		return fmt.Errorf("instance %s runs on %s, not on this node (%s)", inst.ID, inst.Node, p.node)
	}
	pid, port, err := p.spawn(ctx, inst.ID, inst.Version)
	if err != nil {
		return err
	}
	if err := p.waitHealthy(ctx, pid, port); err != nil {
		p.stop(pid, inst.ID)
		return err
	}
	won, err := p.st.LocalInstanceReplaceProcess(ctx, inst.ID, inst.PID, pid, port)
	if err != nil || !won {
		p.stop(pid, inst.ID)
		return err
	}
	p.log.Info("Restarted instance", "instance_id", inst.ID, "version", inst.Version, "pid", pid, "port", port)
	inst.PID, inst.Port, inst.State = pid, port, "running"
	return nil
}
