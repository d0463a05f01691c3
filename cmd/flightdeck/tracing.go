package main

import (
	"context"
	"time"

	"flightdeck/internal/tracing"
)

// startTracing installs the OTLP exporter when the OTEL_* variables ask
// for it (contract §8) and returns what flushes it on exit.
func startTracing(ctx context.Context, env *cliEnv) (stop func(), err error) {
	shutdown, err := tracing.Setup(ctx, env.getenv)
	if err != nil {
		return nil, err
	}
	if tracing.Enabled() {
		env.logger.Info("Tracing on: exporting spans over OTLP")
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			env.logger.Warn("Could not flush the last spans", "error", err)
		}
	}, nil
}
