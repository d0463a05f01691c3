package pipeline

import (
	"encoding/json"
	"slices"
	"strings"
)

// versionNames are parameter names that hold what a deploy ships: the
// parameter a rollback changes and lists show as the version. "version"
// wins; otherwise the first string or enum parameter named like one of
// these (or ending in _version).
var versionNames = []string{"version", "tag", "image_tag", "ref", "git_ref", "commit", "sha", "revision", "release"}

// VersionParam names the pipeline's version-like parameter, or "" when it
// has none. A secret parameter is never one: versions are shown.
func (p *Pipeline) VersionParam() string {
	shown := func(prm Param) bool { return (prm.Type == "string" || prm.Type == "enum") && !prm.Secret }
	for _, name := range versionNames {
		for _, prm := range p.Params {
			if prm.Name == name && shown(prm) {
				return name
			}
		}
		if name == "version" {
			for _, prm := range p.Params {
				if strings.HasSuffix(prm.Name, "_version") && shown(prm) {
					return prm.Name
				}
			}
		}
	}
	return ""
}

// InTarget reports whether a deploy with params goes to target (param
// values, e.g. TargetOf's): every value of target is the deploy's. A
// parameter an older deploy lacks (added to the pipeline since) counts as
// its default. Values compare as JSON, so params read back from the
// database (float64) and validated ones (int64) are equal.
func (p *Pipeline) InTarget(target, params map[string]any) bool {
	for _, prm := range p.Params {
		want, ok := target[prm.Name]
		if !ok {
			continue
		}
		got, ok := params[prm.Name]
		if !ok || got == nil {
			got = prm.Default
		}
		if Canon(got) != Canon(want) {
			return false
		}
	}
	return true
}

// Canon is v's JSON text: params read back from the database (float64)
// and validated ones (int64) compare equal.
func Canon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "?"
	}
	return string(b)
}

// TargetKey names the target of a deploy with these (validated) params:
// the canonical JSON text of TargetOf (object keys sorted, so equal targets
// have equal keys), "" when the pipeline's target is empty (nothing names
// where it deploys, so it has no environment). A task stores it at submit
// (saga.NewDeploy); environments and their history are found by it.
func (p *Pipeline) TargetKey(params map[string]any) string {
	if len(p.TargetParams()) == 0 {
		return ""
	}
	b, err := json.Marshal(p.TargetOf(params))
	if err != nil {
		return ""
	}
	return string(b)
}

// VersionLike reports whether name is one VersionParam could pick in some
// pipeline: a deploy's target never includes it.
func VersionLike(name string) bool {
	return slices.Contains(versionNames, name) || strings.HasSuffix(name, "_version")
}

// RestoreTarget names a finished deploy's target for time to restore (a
// failure there is restored by the next deploy that completes there): the
// pipeline and its target key, or, for a deploy stored without one (made
// before target keys, or of a pipeline whose params name no target), its
// concurrency key, else its params but the version-like ones. The rollup
// fold calls it with what the tasks row holds; the pipeline may be gone.
func RestoreTarget(pipelineName, targetKey, concurrencyKey string, params map[string]any) string {
	switch {
	case targetKey != "":
		return pipelineName + " " + targetKey
	case concurrencyKey != "":
		return pipelineName + " " + concurrencyKey
	}
	rest := make(map[string]any, len(params))
	for k, v := range params {
		if !VersionLike(k) {
			rest[k] = v
		}
	}
	return pipelineName + " " + Canon(rest) // json.Marshal sorts the keys
}
