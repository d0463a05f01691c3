// Command flightdeck is the deploy console: web UI, API, WebSocket, worker
// pool and the CLI clients, in one binary. This package is wiring only.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
)

const usage = `flightdeck — a self-hosted deploy console

Usage:
  flightdeck serve [--addr :8080] [--workers N] [--role all|web|worker] [--grace 30s] [--no-migrate]
  flightdeck migrate
  flightdeck user add --email E --team T --role R [--password P]
  flightdeck token create --email E [--name N]
  flightdeck token revoke --email E [--name N]
  flightdeck submit --pipeline P [--param k=v]... [--priority p] [--watch]   (FLIGHTDECK_URL, FLIGHTDECK_TOKEN)
  flightdeck watch TASK_ID
  flightdeck bench queue [--tasks N] [--workers W] [--rate R] [--database-url U]
  flightdeck db url [--fresh NAME]   start the embedded PostgreSQL if needed and print its URL (or a new database's)
  flightdeck db stop     stop the embedded PostgreSQL
  flightdeck demoapp --version V [--addr 127.0.0.1:0]   the demo app the local provider deploys
  flightdeck version [--json]   module version, commit and Go version of this binary

Configuration comes from the environment (DATABASE_URL, FLIGHTDECK_*); flags win.
`

// errUsage marks a command-line mistake: exit status 2.
var errUsage = errors.New("usage error")

func main() {
	tuneGC(os.Getenv)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flightdeck:", err)
		if errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// tuneGC sets the garbage collector for a server that shares its machine
// with PostgreSQL: its live heap is small and steady, so collecting at 5x
// the live heap instead of 2x hands the database back CPU (about a tenth
// more queue throughput measured), while a soft limit of 768 MiB makes the
// collector work harder before memory grows large (10,000 sockets fit in
// 1 GiB). GOGC and GOMEMLIMIT, when set, win.
func tuneGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(768 << 20)
	}
}

// run dispatches a subcommand. Everything a command touches comes in as an
// argument, so tests can run commands in-process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("%w: no command given", errUsage)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	env := &cliEnv{getenv: getenv, stdout: stdout, stderr: stderr, logger: logger}
	switch args[0] {
	case "serve":
		return runServe(ctx, env, args[1:])
	case "migrate":
		return runMigrate(ctx, env, args[1:])
	case "user":
		return runUser(ctx, env, args[1:])
	case "token":
		return runToken(ctx, env, args[1:])
	case "submit":
		return runSubmit(ctx, env, args[1:])
	case "watch":
		return runWatch(ctx, env, args[1:])
	case "bench":
		return runBench(ctx, env, args[1:])
	case "db":
		return runDB(ctx, env, args[1:])
	case "demoapp":
		return runDemoApp(ctx, env, args[1:])
	case "version", "--version":
		return runVersion(env, args[1:])
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("%w: unknown command %q", errUsage, args[0])
}

// cliEnv is what every subcommand gets from main.
type cliEnv struct {
	getenv func(string) string
	stdout io.Writer
	stderr io.Writer
	logger *slog.Logger
}
