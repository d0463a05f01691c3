package pipeline

import "slices"

// Deploys reports whether p's tasks are deploys in the DORA sense: changes
// shipped to a target, whose failures are change failures and whose next
// success restores the target. That is a pipeline that declares a
// non-empty target, or, declaring none, has a version parameter (the one
// parameter the default target leaves out: it says what is shipped).
// Checks and chores (health-check, noop: no version, no declared target)
// are not deploys, and the dashboard shows no DORA figures for them.
func (p *Pipeline) Deploys() bool {
	if p.Target != nil {
		return len(p.Target) > 0
	}
	return slices.ContainsFunc(p.Params, func(prm Param) bool { return prm.Name == "version" })
}
