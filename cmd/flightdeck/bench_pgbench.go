package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"flightdeck/internal/pgcluster"
	"flightdeck/store"
)

// pgbenchScript is the reference the queue is measured against: one
// single-row UPDATE per transaction (pgbench's own tables, scale 10).
const pgbenchScript = `\set aid random(1, 100000 * :scale)
\set delta random(-5000, 5000)
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
`

var pgbenchTPS = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// runPgbench measures pgbench's one-row-UPDATE transactions per second at 16
// clients on dbURL for d, so the queue's figure has its reference from the
// same cluster in the same run.
func runPgbench(ctx context.Context, dbURL string, d time.Duration) (float64, error) {
	bin, err := pgcluster.Tool("pgbench")
	if err != nil {
		return 0, fmt.Errorf("pgbench not found (install Debian's postgresql-client, or pass --pgbench 0): %w", err)
	}
	dir, err := os.MkdirTemp("", "fd-pgbench-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "update.sql")
	if err := os.WriteFile(script, []byte(pgbenchScript), 0o644); err != nil {
		return 0, err
	}
	if out, err := exec.CommandContext(ctx, bin, "-i", "-q", "-s", "10", dbURL).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("pgbench -i: %w: %s", err, bytes.TrimSpace(out))
	}
	// After the set-up's writes, as the burn-down (a refusal only makes the
	// figure noisier; bench queue warns about it there).
	_ = store.Checkpoint(ctx, dbURL)
	secs := strconv.Itoa(max(1, int(d.Round(time.Second).Seconds())))
	out, err := exec.CommandContext(ctx, bin, "-n", "-c", "16", "-j", "2", "-T", secs, "-f", script, dbURL).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pgbench: %w: %s", err, bytes.TrimSpace(out))
	}
	m := pgbenchTPS.FindSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("pgbench printed no tps: %s", bytes.TrimSpace(out))
	}
	return strconv.ParseFloat(string(m[1]), 64)
}
