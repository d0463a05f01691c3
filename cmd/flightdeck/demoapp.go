package main

import (
	"context"

	"flightdeck/workflow/action/local"
)

// runDemoApp is "flightdeck demoapp": the app the local provider deploys.
func runDemoApp(ctx context.Context, env *cliEnv, args []string) error {
	return local.RunDemoApp(ctx, args, env.stdout, env.stderr)
}
