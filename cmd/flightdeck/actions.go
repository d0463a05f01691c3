package main

import (
	"flightdeck/internal/breaker"
	"flightdeck/internal/config"
	"flightdeck/store"
	"flightdeck/workflow/action"
	"flightdeck/workflow/action/analysis"
	"flightdeck/workflow/action/local"
	"flightdeck/workflow/pipeline"
)

// serverActions are the actions this server's steps run: noop, exec,
// http, analysis, and local.* when lp is not nil.
func serverActions(cfg config.Config, st *store.Store, lp *local.Provider) action.Registry {
	actions := action.Registry{
		"noop": action.Noop,
		"exec": action.Exec{},
		"http": action.HTTP{Breakers: action.NewBreakers(breaker.Config{Failures: cfg.HTTPBreakerThreshold,
			OpenFor: cfg.HTTPBreakerCooldown, Successes: cfg.HTTPBreakerSuccesses})},
	}
	acfg := analysis.Config{}
	if lp != nil {
		lp.Register(actions)
		acfg.Store, acfg.ProxyURL = st, lp.ProxyURL
	}
	actions["analysis"] = analysis.New(acfg)
	return actions
}

// actionSchemas is what the pipeline loader checks steps against: every
// action a server has, whatever its role (a web process loads the same
// pipelines as the workers that run them, so local.* is always known).
func actionSchemas() map[string]pipeline.ActionSchema {
	out := map[string]pipeline.ActionSchema{
		"noop": {},
		"exec": {Inputs: action.ExecInputs},
		"http": {Inputs: action.HTTPInputs},
		"analysis": {Inputs: analysis.Inputs, Check: func(with map[string]any) (string, error) {
			if err := analysis.Check(with); err != nil {
				return err.Field, err
			}
			return "", nil
		}},
	}
	for name, inputs := range local.Inputs {
		out[name] = pipeline.ActionSchema{Inputs: inputs}
	}
	return out
}
