package main

import (
	"context"
	"errors"
	"fmt"

	"flightdeck/internal/auth"
	"flightdeck/internal/config"
	"flightdeck/store"
)

func runToken(ctx context.Context, env *cliEnv, args []string) error {
	if len(args) == 0 || (args[0] != "create" && args[0] != "revoke") {
		return fmt.Errorf("%w: usage: flightdeck token create|revoke --email E [--name N]", errUsage)
	}
	fs := newFlagSet("token "+args[0], env.stderr)
	email := fs.String("email", "", "the token owner's email (required)")
	name := fs.String("name", "", "a name for the token")
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	e := auth.NormalizeEmail(*email)
	if e == "" {
		return fmt.Errorf("%w: --email is required", errUsage)
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
	switch args[0] {
	case "create":
		secret, hash := auth.NewSecret(auth.TokenPrefix)
		err := st.TokenCreate(ctx, e, *name, hash)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no user %s (create it with flightdeck user add)", e)
		}
		if err != nil {
			return err
		}
		fmt.Fprintln(env.stdout, secret)
	case "revoke":
		n, err := st.TokenRevoke(ctx, e, *name)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("no user %s", e)
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(env.stderr, "revoked %d token(s)\n", n)
	}
	return nil
}
