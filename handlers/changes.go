package handlers

import (
	"fmt"
	"maps"
	"slices"

	"flightdeck/views/pages"
	"flightdeck/workflow/task"
)

// changeRows is a diff as pages show it: every param of either side, the
// ones that differ marked (task.DiffParams decides which).
func changeRows(c *task.Changes) []pages.ChangeRow {
	if c == nil {
		return nil
	}
	changed := map[string]bool{}
	for _, f := range c.Fields {
		changed[f] = true
	}
	keys := map[string]bool{}
	for k := range c.From {
		keys[k] = true
	}
	for k := range c.To {
		keys[k] = true
	}
	var out []pages.ChangeRow
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		out = append(out, pages.ChangeRow{Field: k, From: shown(c.From, k), To: shown(c.To, k), Changed: changed[k]})
	}
	return out
}

func shown(m map[string]any, k string) string {
	if m == nil {
		return "—"
	}
	v, ok := m[k]
	if !ok || v == nil {
		return "—"
	}
	return fmt.Sprint(v)
}
