package local

import (
	"context"
	"fmt"
)

// RecoverReport says what Recover did, by instance id.
type RecoverReport struct {
	Adopted   []string
	Restarted []string
	Stopped   []string
	Failed    []string
}

// Recover reconciles the instances recorded as running on this node with
// the processes that really run (call it at serve start, before workers
// claim tasks). An instance whose process is alive and ours is adopted. A
// dead one that is its route's current instance is restarted with the same
// version so the route keeps serving; if that fails it is marked failed
// (the route answers 503). Other dead ones (standbys) are marked stopped.
// Instances still "starting" belong to a step that will be re-run with the
// same key, which handles them; Recover only ends starts abandoned for
// longer than AbandonedStart (killing their processes, marked failed).
func (p *Provider) Recover(ctx context.Context) (RecoverReport, error) {
	var rep RecoverReport
	abandoned, err := p.st.LocalInstanceListAbandoned(ctx, p.node, p.cfg.AbandonedStart)
	if err != nil {
		return rep, err
	}
	for _, inst := range abandoned {
		for _, pid := range instancePIDs(inst.ID) {
			p.stop(pid, inst.ID)
		}
		if err := p.st.LocalInstanceSetProcess(ctx, inst.ID, 0, inst.Port, "failed"); err != nil {
			return rep, err
		}
		rep.Failed = append(rep.Failed, inst.ID)
	}
	insts, err := p.st.LocalInstanceListByNode(ctx, p.node, "running")
	if err != nil {
		return rep, err
	}
	for i := range insts {
		inst := &insts[i]
		if ours(inst.PID, inst.ID) {
			rep.Adopted = append(rep.Adopted, inst.ID)
			continue
		}
		current, err := p.st.LocalInstanceIsCurrent(ctx, inst.ID)
		if err != nil {
			return rep, err
		}
		if !current {
			if err := p.st.LocalInstanceSetProcess(ctx, inst.ID, 0, inst.Port, "stopped"); err != nil {
				return rep, err
			}
			rep.Stopped = append(rep.Stopped, inst.ID)
			continue
		}
		if err := p.ensureRunning(ctx, inst); err != nil {
			p.log.Warn("Could not restart an instance", "instance_id", inst.ID, "version", inst.Version, "error", err)
			if err := p.st.LocalInstanceSetProcess(ctx, inst.ID, 0, inst.Port, "failed"); err != nil {
				return rep, err
			}
			rep.Failed = append(rep.Failed, inst.ID)
			continue
		}
		rep.Restarted = append(rep.Restarted, inst.ID)
	}
	if n := len(rep.Adopted) + len(rep.Restarted) + len(rep.Stopped) + len(rep.Failed); n > 0 {
		p.log.Info("Local instances recovered", "adopted", len(rep.Adopted), "restarted", len(rep.Restarted),
			"stopped", len(rep.Stopped), "failed", len(rep.Failed))
	}
	return rep, nil
}

// String summarises the report for logs and tests.
func (r RecoverReport) String() string {
	return fmt.Sprintf("adopted %d, restarted %d, stopped %d, failed %d", len(r.Adopted), len(r.Restarted), len(r.Stopped), len(r.Failed))
}
