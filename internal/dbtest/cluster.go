package dbtest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"flightdeck/internal/pgcluster"
	"flightdeck/store"
)

// Cluster is a private PostgreSQL cluster of one test, with the server's
// durable defaults (fsync and synchronous commit on), that the test may
// restart or crash: the shared test server must never be.
type Cluster struct {
	URL  string // a migrated database on it
	dir  string
	port int
}

// NewCluster initialises and starts a cluster in a temporary folder (about
// two seconds), creates and migrates a database, and removes it all when
// the test ends. It listens on loopback only; as root it runs as the
// postgres user.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	initdb, err := pgcluster.Tool("initdb")
	if err != nil {
		t.Fatalf("no PostgreSQL binaries: %v", err)
	}
	dir, err := os.MkdirTemp("", "fd-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "pg")
	if err := os.Mkdir(data, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("no postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(data, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	c := &Cluster{dir: data, port: freePort(t)}
	asOwner(t, initdb, "-D", data, "--auth=trust", "-U", "postgres", "--no-sync")
	c.pgctl(t, "start", "-w", "-t", "60", "-l", filepath.Join(data, "server.log"),
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", c.port, data))
	t.Cleanup(func() { c.pgctl(t, "stop", "-m", "immediate", "-w") })

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	server := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
	c.URL = strings.Replace(server, "/postgres?", "/flightdeck?", 1)
	admin, err := pgxpool.New(ctx, server)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec(ctx, `CREATE DATABASE flightdeck`); err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := store.New(pool).Migrate(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return c
}

// Restart restarts the server: mode fast (every session is terminated with
// 57P01 and the server shuts down cleanly) or immediate (a crash: the
// server recovers from its write-ahead log on start).
func (c *Cluster) Restart(t testing.TB, mode string) {
	t.Helper()
	c.pgctl(t, "restart", "-m", mode, "-w", "-t", "60", "-l", filepath.Join(c.dir, "server.log"),
		"-o", fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1", c.port, c.dir))
}

func (c *Cluster) pgctl(t testing.TB, args ...string) {
	t.Helper()
	pgctl, err := pgcluster.Tool("pg_ctl")
	if err != nil {
		t.Fatal(err)
	}
	asOwner(t, pgctl, append([]string{"-D", c.dir}, args...)...)
}

func asOwner(t testing.TB, prog string, args ...string) {
	t.Helper()
	cmd := exec.Command(prog, args...)
	if os.Geteuid() == 0 {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", prog}, args...)...)
	}
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v: %s", filepath.Base(prog), args, err, out)
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
