package pipeline

import (
	_ "embed"

	"flightdeck/workflow/environment"
)

//go:embed demo/environments.yaml
var demoEnvironments []byte

// DemoEnvironments are the demo's environments' rules: production needs
// two reviewers, a soak in staging and a version like 1.2.3, and has a
// nightly freeze window; staging promotes to it.
func DemoEnvironments() *environment.Rules {
	r, err := ParseEnvironments("demo/environments.yaml", demoEnvironments)
	if err != nil {
		panic(err) // caught by TestDemoEnvironmentsLoad
	}
	return r
}
