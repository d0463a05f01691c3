package main

import (
	"context"
	"fmt"
	"strings"

	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/store"
	"flightdeck/workflow/task"
)

func runUser(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 || args[0] != "add" {
		return fmt.Errorf("%w: usage: flightdeck user add --email E --team T --role R [--password P]", errUsage)
	}
	fs := newFlagSet("user add", env.stderr)
	email := fs.String("email", "", "the user's email (required)")
	team := fs.String("team", "", "team name, created if new (required)")
	role := fs.String("role", "", "one of "+strings.Join(task.RoleNames(task.Roles), ", ")+" (required)")
	password := fs.String("password", "", "password for the login page (optional; at least 8 characters)")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	e := auth.NormalizeEmail(*email)
	if !auth.ValidEmail(e) {
		return fmt.Errorf("%w: --email %q is not a valid email address", errUsage, *email)
	}
	if !auth.ValidTeamName(*team) {
		return fmt.Errorf("%w: --team %q: use lowercase letters, digits and dashes", errUsage, *team)
	}
	r, err := task.ParseRole(*role)
	if err != nil {
		return fmt.Errorf("%w: --role: %w", errUsage, err)
	}
	hash := ""
	if *password != "" {
		if hash, err = auth.HashPassword(*password); err != nil {
			return fmt.Errorf("%w: --password: %w", errUsage, err)
		}
	}
	cfg, err := config.Load(env.getenv)
	if err != nil {
		return err
	}
	st, err := openStore(ctx, env, cfg, 2)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Migrate(ctx, nil); err != nil {
		return err
	}
	id, err := st.UserAdd(ctx, store.UserAddParams{Email: e, Team: *team, Role: r, PasswordHash: hash})
	if err != nil {
		return err
	}
	fmt.Fprintln(env.stdout, id)
	return nil
}
