package task

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Changes is what a deploy changes in its environment: the params of the
// environment's current deploy (nil before the first), this deploy's, and
// the names of the params that differ, sorted. Both sides are the public
// params: secrets are redacted before they get here.
type Changes struct {
	From   map[string]any `json:"from"`
	To     map[string]any `json:"to"`
	Fields []string       `json:"fields"`
}

// DiffParams is the Changes from from to to; values compare as JSON (a number
// read back from the database equals the one validated).
func DiffParams(from, to map[string]any) Changes {
	c := Changes{From: from, To: to, Fields: []string{}}
	seen := map[string]bool{}
	for _, m := range []map[string]any{from, to} {
		for k := range m {
			if seen[k] {
				continue
			}
			seen[k] = true
			if from == nil || canon(from[k]) != canon(to[k]) {
				c.Fields = append(c.Fields, k)
			}
		}
	}
	sort.Strings(c.Fields)
	return c
}

func canon(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
