package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// paramFlags collects repeated --param k=v.
type paramFlags map[string]string

func (p paramFlags) String() string { return fmt.Sprint(map[string]string(p)) }
func (p paramFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	p[k] = val
	return nil
}

func runSubmit(ctx context.Context, env *cliEnv, args []string) error {
	fs := newFlagSet("submit", env.stderr)
	pipelineName := fs.String("pipeline", "", "pipeline to run (required)")
	params := paramFlags{}
	fs.Var(params, "param", "a parameter as key=value (repeatable)")
	priority := fs.String("priority", "", "hotfix, high, normal (default) or low")
	team := fs.String("team", "", "team to submit for, when you deploy for several")
	key := fs.String("idempotency-key", "", "make retries of this submission safe")
	watch := fs.Bool("watch", false, "follow the task until it ends; exit non-zero unless it completed")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *pipelineName == "" {
		return fmt.Errorf("%w: --pipeline is required", errUsage)
	}
	client, err := newAPIClient(env)
	if err != nil {
		return err
	}
	// Parameters are typed by the pipeline's schema: fetch it so ints and
	// bools and lists are sent as such.
	var pls struct {
		Pipelines []struct {
			Name   string `json:"name"`
			Params []struct {
				Name string `json:"name"`
				Type string `json:"type"`
			} `json:"params"`
		} `json:"pipelines"`
	}
	if _, err := client.do(ctx, "GET", "/api/v1/pipelines", nil, nil, &pls); err != nil {
		return err
	}
	types := map[string]string{}
	for _, p := range pls.Pipelines {
		if p.Name == *pipelineName {
			for _, prm := range p.Params {
				types[prm.Name] = prm.Type
			}
		}
	}
	typed := map[string]any{}
	for k, v := range params {
		switch types[k] {
		case "int":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return fmt.Errorf("%w: --param %s: want an integer", errUsage, k)
			}
			typed[k] = n
		case "bool":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return fmt.Errorf("%w: --param %s: want true or false", errUsage, k)
			}
			typed[k] = b
		case "list":
			typed[k] = strings.Split(v, ",")
		default:
			typed[k] = v
		}
	}
	body := map[string]any{"kind": "deploy", "pipeline": *pipelineName, "params": typed}
	if *priority != "" {
		body["priority"] = *priority
	}
	if *team != "" {
		body["team"] = *team
	}
	header := map[string]string{}
	if *key != "" {
		header["Idempotency-Key"] = *key
	}
	var t struct {
		ID string `json:"id"`
	}
	if _, err := client.do(ctx, "POST", "/api/v1/tasks", body, header, &t); err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, t.ID)
	if !*watch {
		return nil
	}
	return watchTask(ctx, env, client, t.ID)
}
