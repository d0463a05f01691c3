package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"flightdeck/internal/config"
	"flightdeck/store"
	"flightdeck/workflow/action/local"
	"flightdeck/workflow/agent"
	"flightdeck/workflow/artifact"
	"flightdeck/workflow/environment"
	"flightdeck/workflow/pipeline"
	"flightdeck/workflow/queue"
	"flightdeck/workflow/saga"
	"flightdeck/workflow/task"
)

// taskHandlers wires the handler of each task kind: deploys run as sagas
// over the registered actions (local.* when lp is not nil); agent tasks
// (when an LLM is configured) run the agent loop.
func taskHandlers(cfg config.Config, st *store.Store, catalog *pipeline.Catalog, logger *slog.Logger, lp *local.Provider) map[task.Kind]queue.Handler {
	actions := serverActions(cfg, st, lp)
	runner := saga.NewRunner(saga.Config{Catalog: catalog, Actions: actions, Logger: logger,
		Artifacts: artifactSink{artifact.New(st, cfg.ArtifactMaxBytes)}, Secrets: cfg.SecretValues,
		Freezes: func(ctx context.Context, teamID, env string, at time.Time) ([]environment.Span, error) {
			return saga.APIFreezes(ctx, st, teamID, env, at)
		}})
	handlers := map[task.Kind]queue.Handler{task.KindDeploy: runner}
	if cfg.AgentsEnabled() {
		handlers[task.KindAgent] = agent.NewRunner(agentConfig(cfg, st, catalog, logger))
	}
	return handlers
}

// agentConfig is the agent runner's configuration: the LLM client, budgets
// and retry settings from cfg (zero values: the agent's defaults).
func agentConfig(cfg config.Config, st *store.Store, catalog *pipeline.Catalog, logger *slog.Logger) agent.Config {
	a := cfg.Agent
	return agent.Config{
		Client: agent.NewOpenAI(agent.OpenAIConfig{BaseURL: cfg.OpenAIBaseURL, APIKey: cfg.OpenAIAPIKey, Model: cfg.OpenAIModel}),
		Budgets: agent.Budgets{MaxIterations: a.MaxIterations, MaxTokens: a.MaxTokens, MaxToolCalls: a.MaxToolCalls,
			WallClockSeconds: int(a.MaxWall / time.Second)},
		Retry: agent.RetryConfig{Attempts: a.LLMAttempts, RequestTimeout: a.LLMTimeout, BackoffBase: a.LLMBackoff,
			BackoffMax: a.LLMBackoffMax, BreakerThreshold: a.LLMBreakerThreshold, BreakerCooldown: a.LLMBreakerCooldown},
		Catalog: catalog, Store: st, Artifacts: artifact.New(st, cfg.ArtifactMaxBytes), MaxPending: cfg.MaxPending,
		Secrets: cfg.SecretValues, Logger: logger,
	}
}

// artifactSink adapts artifact.Store to the saga runner's ArtifactSink.
type artifactSink struct{ s *artifact.Store }

func (k artifactSink) Create(ctx context.Context, taskID, teamID string, stepIdx int, name string, secrets []string) (saga.ArtifactWriter, error) {
	return k.s.Create(ctx, taskID, teamID, stepIdx, name, secrets)
}

// loadCatalog is the built-in pipelines plus FLIGHTDECK_PIPELINES' files
// (a file replaces the built-in of the same name). A file that does not
// load stops the server with its path and line.
func loadCatalog(cfg config.Config) (*pipeline.Catalog, error) {
	all := pipeline.Builtin()
	if cfg.PipelinesDir != "" {
		loaded, err := pipeline.LoadDir(cfg.PipelinesDir)
		if err != nil {
			return nil, fmt.Errorf("FLIGHTDECK_PIPELINES: %w", err)
		}
		all = append(all, loaded...)
	}
	catalog, err := pipeline.NewCatalog(all...)
	if err != nil {
		return nil, err
	}
	// A step naming an action this server lacks, or a with its action
	// cannot take, fails here rather than mid-deploy (contract §6).
	if err := catalog.CheckActions(actionSchemas()); err != nil {
		return nil, fmt.Errorf("FLIGHTDECK_PIPELINES: %w", err)
	}
	rules, err := pipeline.LoadEnvironments(cfg.PipelinesDir)
	if err != nil {
		return nil, fmt.Errorf("FLIGHTDECK_PIPELINES: %w", err)
	}
	if cfg.PipelinesDir == "" && cfg.Dev {
		// the demo shows protected environments (go tool task run)
		rules = pipeline.DemoEnvironments()
	}
	catalog.SetEnvironments(rules)
	return catalog, nil
}

// localProvider is the local provider of this node.
func localProvider(cfg config.Config, st *store.Store, logger *slog.Logger) (*local.Provider, error) {
	return local.New(local.Config{Store: st, Logger: logger, MonitorInterval: cfg.LocalMonitorInterval, MonitorTick: cfg.LocalMonitorTick,
		HealthTimeout: cfg.LocalHealthTimeout})
}
