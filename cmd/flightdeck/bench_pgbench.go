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

var (
	pgbenchTPS = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	pgbenchTxs = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

// pgbenchRef is the reference the queue is measured against: pgbench's own
// database on the benchmarked server, initialised once and run right before
// and right after the burn-down, so a machine whose speed drifts over the
// minutes of a run (seen here: ±40%) moves both figures alike.
type pgbenchRef struct {
	bin, url, script, dir string
}

// newPgbench initialises pgbench's tables (scale 10) in the database of url.
func newPgbench(ctx context.Context, url string) (*pgbenchRef, error) {
	bin, err := pgcluster.Tool("pgbench")
	if err != nil {
		return nil, fmt.Errorf("pgbench not found (install Debian's postgresql-client, or pass --pgbench 0): %w", err)
	}
	dir, err := os.MkdirTemp("", "fd-pgbench-")
	if err != nil {
		return nil, err
	}
	p := &pgbenchRef{bin: bin, url: url, script: filepath.Join(dir, "update.sql"), dir: dir}
	if err := os.WriteFile(p.script, []byte(pgbenchScript), 0o644); err != nil {
		p.close()
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, bin, "-i", "-q", "-s", "10", url).CombinedOutput(); err != nil {
		p.close()
		return nil, fmt.Errorf("pgbench -i: %w: %s", err, bytes.TrimSpace(out))
	}
	return p, nil
}

// run measures one-row-UPDATE transactions per second at 16 clients for d,
// after a checkpoint, as the burn-down starts after one (a refusal only
// makes the figure noisier; bench queue warns about it there), and the
// machine's busy CPU µs per transaction (0 if unknown; see cpuBusy).
func (p *pgbenchRef) run(ctx context.Context, d time.Duration) (tps, cpuPerTx float64, err error) {
	_ = store.Checkpoint(ctx, p.url)
	secs := strconv.Itoa(max(1, int(d.Round(time.Second).Seconds())))
	cpu := startCPU()
	out, err := exec.CommandContext(ctx, p.bin, "-n", "-c", "16", "-j", "2", "-T", secs, "-f", p.script, p.url).CombinedOutput()
	if err != nil {
		return 0, 0, fmt.Errorf("pgbench: %w: %s", err, bytes.TrimSpace(out))
	}
	m := pgbenchTPS.FindSubmatch(out)
	if m == nil {
		return 0, 0, fmt.Errorf("pgbench printed no tps: %s", bytes.TrimSpace(out))
	}
	if tps, err = strconv.ParseFloat(string(m[1]), 64); err != nil {
		return 0, 0, err
	}
	if m := pgbenchTxs.FindSubmatch(out); m != nil {
		if n, err := strconv.ParseInt(string(m[1]), 10, 64); err == nil {
			cpuPerTx = cpu.perOp(n)
		}
	}
	return tps, cpuPerTx, nil
}

func (p *pgbenchRef) close() { _ = os.RemoveAll(p.dir) }
