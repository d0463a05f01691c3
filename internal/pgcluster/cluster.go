// Package pgcluster runs flightdeck's embedded default PostgreSQL: a private
// cluster under a data folder (default .data/pg), started from the system's
// PostgreSQL binaries, which are installed with apt when missing and the
// process runs as root. It is a real database: durable (fsync, synchronous
// commit and full-page writes on; only the test suite's own cluster turns
// them off, Options.DurabilityOff) and closed to other local users (no trust
// authentication: a generated password kept in a 0600 file under the data
// folder). A set DATABASE_URL bypasses it entirely.
package pgcluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// Options configures Ensure. Zero values mean defaults.
type Options struct {
	Dir      string       // data folder, default ".data"; the cluster lives in Dir/pg
	Port     int          // 0: a free port picked on first start and kept in Dir/pg.port
	Database string       // database to create if missing, default "flightdeck"
	Logger   *slog.Logger // default: discard
	// DurabilityOff starts the cluster with fsync, synchronous commit and
	// full-page writes off: for the test suite's own cluster only, which
	// trades crash safety for speed. A cluster that already runs durable is
	// never switched; one that runs without durability is restarted durable
	// when Ensure is called without this.
	DurabilityOff bool
	// CreateDB lets the app role create databases: for the test suite's
	// own cluster, whose tests each get a database cloned from a template.
	// Without it the role owns flightdeck's database and nothing else.
	CreateDB bool
	// Admin returns the superuser's URL (to the same database) instead of
	// the app role's: for operator tools that make and drop databases of
	// their own (the benchmarks), never for serve or migrate.
	Admin bool
	// Fresh drops Database first (closing its connections), so the caller
	// gets it new and empty, made by the superuser and owned by the app
	// role: `flightdeck db url --fresh NAME`, which the app role could not
	// do itself without CREATEDB.
	Fresh bool
}

// AppRole is the role flightdeck's server, workers and migrations connect
// as: it owns flightdeck's database and its objects, and is no superuser,
// cannot create roles and reads no server files.
const AppRole = "flightdeck"

// The cluster is closed to other local users: TCP on 127.0.0.1 only, no
// Unix socket, and every connection must give the superuser's password,
// generated at creation and kept in Dir/pg.password (0600, owned by whoever
// runs flightdeck). This is pg_hba.conf.
const hbaConf = `# flightdeck's embedded cluster: the generated password (scram-sha-256) on
# every connection; it listens on 127.0.0.1 only and has no Unix socket.
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 scram-sha-256
host    all       all   127.0.0.1/32  scram-sha-256
host    all       all   ::1/128       scram-sha-256
`

// Ensure makes sure the cluster exists and runs, creates the database if
// missing, and returns its URL (with the password). Concurrent callers
// (parallel test binaries, a second `serve`) serialise on a file lock; a
// running cluster is reused. A cluster made by an older flightdeck (trust
// authentication, durability off) is upgraded: a password is set,
// pg_hba.conf rewritten and reloaded, and it is restarted durable.
func Ensure(ctx context.Context, opts Options) (string, error) {
	dir, err := filepath.Abs(cmp.Or(opts.Dir, ".data"))
	if err != nil {
		return "", err
	}
	dbName := cmp.Or(opts.Database, "flightdeck")
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("error creating %s: %w", dir, err)
	}
	unlock, err := lockFile(filepath.Join(dir, "pgcluster.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()

	port := opts.Port
	portFile := filepath.Join(dir, "pg.port")
	if port == 0 {
		if b, err := os.ReadFile(portFile); err == nil {
			port, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	dataDir := filepath.Join(dir, "pg")
	password, err := ensurePassword(filepath.Join(dir, "pg.password"))
	if err != nil {
		return "", err
	}
	appPassword, err := ensurePassword(filepath.Join(dir, "pg.app-password"))
	if err != nil {
		return "", err
	}
	server := func(p int) string {
		return (&url.URL{Scheme: "postgres", User: url.UserPassword("postgres", password), Host: fmt.Sprintf("127.0.0.1:%d", p),
			Path: "/postgres", RawQuery: "sslmode=disable"}).String()
	}
	app := func(p int) (string, error) {
		return ensureApp(ctx, server(p), dbName, appPassword, opts)
	}

	// Fast path: our cluster already answers, closed and as durable as asked.
	if port != 0 && running(dataDir) && !trusts(dataDir) && ping(ctx, server(port)) == nil {
		if ok, err := durableEnough(ctx, server(port), opts.DurabilityOff); err == nil && ok {
			return app(port)
		}
	}

	bin, err := binaries(ctx, logger)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dataDir, "PG_VERSION")); err != nil {
		logger.Info("Creating the embedded PostgreSQL cluster", "dir", dataDir)
		if err := initdb(ctx, bin, dir, dataDir, password); err != nil {
			return "", err
		}
	}
	if port == 0 || !portFree(port) && !running(dataDir) {
		if port, err = freePort(); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(portFile, []byte(strconv.Itoa(port)+"\n"), 0o644); err != nil {
		return "", err
	}
	if !running(dataDir) {
		logger.Info("Starting the embedded PostgreSQL", "port", port, "durable", !opts.DurabilityOff)
		if err := pgctl(ctx, bin, dataDir, port, "start", opts.DurabilityOff); err != nil {
			return "", err
		}
	}
	if trusts(dataDir) {
		logger.Info("Closing the embedded PostgreSQL to other local users: setting a password", "file", filepath.Join(dir, "pg.password"))
		if err := closeTrust(ctx, dataDir, port, password); err != nil {
			return "", err
		}
	}
	if err := waitReady(ctx, server(port)); err != nil {
		return "", err
	}
	ok, err := durableEnough(ctx, server(port), opts.DurabilityOff)
	if err != nil {
		return "", err
	}
	if !ok {
		logger.Info("Restarting the embedded PostgreSQL durable (fsync, synchronous commit, full-page writes on)")
		if err := pgctl(ctx, bin, dataDir, port, "restart", false); err != nil {
			return "", err
		}
		if err := waitReady(ctx, server(port)); err != nil {
			return "", err
		}
	}
	return app(port)
}

// ensurePassword reads the superuser's password from file, creating the
// file (0600) with a new random one when it is missing.
func ensurePassword(file string) (string, error) {
	b, err := os.ReadFile(file)
	if err == nil {
		if pw := strings.TrimSpace(string(b)); pw != "" {
			return pw, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("error reading the embedded database's password (only the user who created %s may use it, or set DATABASE_URL): %w", filepath.Dir(file), err)
	}
	raw := make([]byte, 32)
	_, _ = rand.Read(raw)
	pw := base64.RawURLEncoding.EncodeToString(raw)
	if err := writeFileAtomic(file, []byte(pw+"\n"), 0o600, false); err != nil {
		return "", fmt.Errorf("error writing the embedded database's password: %w", err)
	}
	return pw, nil
}

// trusts reports whether pg_hba.conf lets anyone in without a password
// (a cluster from before passwords).
func trusts(dataDir string) bool {
	b, err := os.ReadFile(filepath.Join(dataDir, "pg_hba.conf"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && !strings.HasPrefix(f[0], "#") && slices.Contains(f, "trust") {
			return true
		}
	}
	return false
}

// closeTrust upgrades a trusting cluster: the superuser gets the password
// (while trust still lets us in), then pg_hba.conf asks for it and the
// server reloads it.
func closeTrust(ctx context.Context, dataDir string, port int, password string) error {
	open := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	if err := waitReady(ctx, open); err != nil {
		return err
	}
	c, err := pgx.Connect(ctx, open)
	if err != nil {
		return fmt.Errorf("error connecting to set the password: %w", err)
	}
	defer c.Close(context.Background())
	// ALTER ROLE takes no parameters; the password is base64url, quoted anyway.
	if _, err := c.Exec(ctx, "ALTER ROLE postgres PASSWORD '"+strings.ReplaceAll(password, "'", "''")+"'"); err != nil {
		return fmt.Errorf("error setting the password: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dataDir, "pg_hba.conf"), []byte(hbaConf), 0o600, true); err != nil {
		return fmt.Errorf("error rewriting pg_hba.conf: %w", err)
	}
	if _, err := c.Exec(ctx, "SELECT pg_reload_conf()"); err != nil {
		return fmt.Errorf("error reloading pg_hba.conf: %w", err)
	}
	return nil
}

// durableEnough: the running server is durable, or need not be.
func durableEnough(ctx context.Context, server string, durabilityOff bool) (bool, error) {
	if durabilityOff {
		return true, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, server)
	if err != nil {
		return false, err
	}
	defer c.Close(context.Background())
	var fsync, syncCommit, fullPages string
	err = c.QueryRow(ctx, `SELECT current_setting('fsync'), current_setting('synchronous_commit'), current_setting('full_page_writes')`).
		Scan(&fsync, &syncCommit, &fullPages)
	if err != nil {
		return false, err
	}
	return fsync == "on" && syncCommit != "off" && fullPages == "on", nil
}

// writeFileAtomic replaces file with data (mode perm), through a temporary
// file in the same folder; forPostgres gives it to the postgres user (as
// root), for files in the data folder.
func writeFileAtomic(file string, data []byte, perm os.FileMode, forPostgres bool) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		return err
	}
	if forPostgres {
		if err := chownFileToPostgres(tmp); err != nil {
			return err
		}
	}
	return os.Rename(tmp, file)
}

// Stop stops the cluster in dir; it is no error when it is not running.
func Stop(ctx context.Context, dir string) error {
	abs, err := filepath.Abs(cmp.Or(dir, ".data"))
	if err != nil {
		return err
	}
	dataDir := filepath.Join(abs, "pg")
	if !running(dataDir) {
		return nil
	}
	bin, err := binaries(ctx, nil)
	if err != nil {
		return err
	}
	return runAsOwner(ctx, filepath.Join(bin, "pg_ctl"), "-D", dataDir, "-m", "fast", "-w", "stop")
}

// binaries finds the newest installed PostgreSQL, installing Debian's
// package when none is there and we are root.
func binaries(ctx context.Context, logger *slog.Logger) (string, error) {
	if bin := findBinaries(); bin != "" {
		return bin, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("no PostgreSQL server binaries found in /usr/lib/postgresql/*/bin: install Debian's postgresql package (apt-get install postgresql) or set DATABASE_URL")
	}
	if logger != nil {
		logger.Info("Installing PostgreSQL with apt-get (one time)")
	}
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "postgresql"}} {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get %s failed: %w\n%s", args[0], err, out)
		}
	}
	if bin := findBinaries(); bin != "" {
		return bin, nil
	}
	return "", errors.New("postgresql was installed but no binaries were found in /usr/lib/postgresql/*/bin")
}

func findBinaries() string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "pg_ctl")) {
			return d
		}
	}
	return ""
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func initdb(ctx context.Context, bin, dir, dataDir, password string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	if err := chownToPostgres(dataDir); err != nil {
		return err
	}
	// initdb reads the superuser's password from a file the server's user
	// can read; it is removed at once.
	pwfile := filepath.Join(dir, "pg.initdb-password")
	if err := writeFileAtomic(pwfile, []byte(password+"\n"), 0o600, true); err != nil {
		return err
	}
	defer os.Remove(pwfile)
	if err := runAsOwner(ctx, filepath.Join(bin, "initdb"), "-D", dataDir, "--auth=scram-sha-256", "--pwfile="+pwfile,
		"-U", "postgres", "-E", "UTF8", "--no-sync"); err != nil {
		return fmt.Errorf("initdb failed: %w", err)
	}
	if err := writeFileAtomic(filepath.Join(dataDir, "pg_hba.conf"), []byte(hbaConf), 0o600, true); err != nil {
		return fmt.Errorf("error writing pg_hba.conf: %w", err)
	}
	return nil
}

// pgctl starts or restarts the server on 127.0.0.1 only, TCP only (a socket
// path under a deep folder can exceed the 107-byte limit). It is durable
// unless durabilityOff (the test suite's own cluster, where fsync would
// cost minutes).
func pgctl(ctx context.Context, bin, dataDir string, port int, action string, durabilityOff bool) error {
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories='' -c max_connections=400 -c shared_buffers=256MB", port)
	if durabilityOff {
		opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	}
	args := []string{"-D", dataDir, "-l", filepath.Join(dataDir, "server.log"), "-o", opts, "-w", "-t", "60"}
	if action == "restart" {
		args = append(args, "-m", "fast")
	}
	err := runAsOwner(ctx, filepath.Join(bin, "pg_ctl"), append(args, action)...)
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dataDir, "server.log"))
		return fmt.Errorf("pg_ctl %s failed: %w\n%s", action, err, tail(string(log), 2000))
	}
	return nil
}

// running reports whether a postmaster for dataDir is alive.
func running(dataDir string) bool {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return false
	}
	return syscall.Kill(pid, 0) == nil
}

func ping(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

func waitReady(ctx context.Context, url string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := ping(ctx, url)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the embedded PostgreSQL did not accept connections: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// ensureApp makes sure the app role exists with its password and least
// privilege, owns database name (created if missing) and every object of
// it, and returns the app role's URL to it (the superuser's with
// opts.Admin). A cluster made before the app role (its tables owned by the
// superuser) is upgraded here; on one already upgraded it finds nothing to
// move.
func ensureApp(ctx context.Context, server, name, appPassword string, opts Options) (string, error) {
	c, err := pgx.Connect(ctx, server)
	if err != nil {
		return "", err
	}
	defer c.Close(context.Background())
	createDB := "NOCREATEDB"
	if opts.CreateDB {
		createDB = "CREATEDB"
	}
	// CREATE and ALTER ROLE take no parameters; the password is base64url,
	// quoted anyway.
	attrs := "LOGIN NOSUPERUSER NOCREATEROLE " + createDB + " NOREPLICATION NOBYPASSRLS PASSWORD '" + strings.ReplaceAll(appPassword, "'", "''") + "'"
	role := pgx.Identifier{AppRole}.Sanitize()
	var exists bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, AppRole).Scan(&exists); err != nil {
		return "", err
	}
	verb := "ALTER"
	if !exists {
		verb = "CREATE"
	}
	if _, err := c.Exec(ctx, verb+" ROLE "+role+" "+attrs); err != nil && !strings.Contains(err.Error(), "42710") {
		return "", fmt.Errorf("error making the app role: %w", err)
	}
	// Membership of a predefined role (pg_read_server_files and the like)
	// would hand those rights on: none is kept.
	if _, err := c.Exec(ctx, `DO $$ DECLARE r record; BEGIN
		FOR r IN SELECT g.rolname FROM pg_auth_members m JOIN pg_roles g ON g.oid = m.roleid JOIN pg_roles u ON u.oid = m.member
			WHERE u.rolname = '`+AppRole+`' LOOP
			EXECUTE format('REVOKE %I FROM %I', r.rolname, '`+AppRole+`');
		END LOOP; END $$`); err != nil {
		return "", fmt.Errorf("error revoking the app role's memberships: %w", err)
	}
	db := pgx.Identifier{name}.Sanitize()
	if opts.Fresh {
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			return "", fmt.Errorf("error dropping database %s: %w", name, err)
		}
	}
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := c.Exec(ctx, "CREATE DATABASE "+db+" OWNER "+role); err != nil && !strings.Contains(err.Error(), "42P04") {
			return "", fmt.Errorf("error creating database %s: %w", name, err)
		}
	}
	if _, err := c.Exec(ctx, "ALTER DATABASE "+db+" OWNER TO "+role); err != nil {
		return "", fmt.Errorf("error giving database %s to the app role: %w", name, err)
	}
	u, err := url.Parse(server)
	if err != nil {
		return "", err
	}
	u.Path = "/" + name
	if err := ownEverything(ctx, u.String()); err != nil {
		return "", err
	}
	if !opts.Admin {
		u.User = url.UserPassword(AppRole, appPassword)
	}
	return u.String(), nil
}

// ownEverything gives the app role the objects of database dbURL's public
// schema that another role owns: the tables, views and sequences, the
// functions and the types (composite ones too) an older flightdeck's
// migrations made as the superuser. A table's own sequences move with it.
func ownEverything(ctx context.Context, dbURL string) error {
	c, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, `DO $$ DECLARE r record; BEGIN
	FOR r IN SELECT c.oid::regclass AS obj, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'c') AND pg_get_userbyid(c.relowner) <> '`+AppRole+`' LOOP
		EXECUTE format('ALTER %s %s OWNER TO %I', CASE r.relkind WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
			WHEN 'f' THEN 'FOREIGN TABLE' WHEN 'c' THEN 'TYPE' ELSE 'TABLE' END, r.obj, '`+AppRole+`');
	END LOOP;
	FOR r IN SELECT c.oid::regclass AS obj FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = 'public' AND c.relkind = 'S' AND pg_get_userbyid(c.relowner) <> '`+AppRole+`' LOOP
		EXECUTE format('ALTER SEQUENCE %s OWNER TO %I', r.obj, '`+AppRole+`');
	END LOOP;
	FOR r IN SELECT p.oid::regprocedure AS obj, p.prokind FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'public' AND pg_get_userbyid(p.proowner) <> '`+AppRole+`' LOOP
		EXECUTE format('ALTER %s %s OWNER TO %I', CASE r.prokind WHEN 'p' THEN 'PROCEDURE' WHEN 'a' THEN 'AGGREGATE' ELSE 'FUNCTION' END,
			r.obj, '`+AppRole+`');
	END LOOP;
	FOR r IN SELECT t.oid::regtype AS obj FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		WHERE n.nspname = 'public' AND t.typtype IN ('e', 'd', 'r', 'm') AND pg_get_userbyid(t.typowner) <> '`+AppRole+`' LOOP
		EXECUTE format('ALTER TYPE %s OWNER TO %I', r.obj, '`+AppRole+`');
	END LOOP;
	END $$`)
	if err != nil {
		return fmt.Errorf("error giving flightdeck's objects to the app role: %w", err)
	}
	return nil
}

// runAsOwner runs a PostgreSQL program; as root it runs as the postgres
// user, since the server refuses to run as root.
func runAsOwner(ctx context.Context, prog string, args ...string) error {
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "postgres", "--", prog}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, prog, args...)
	}
	cmd.Dir = "/"
	// pg_ctl start leaves the server running: it must not die with us.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(prog), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// chownFileToPostgres gives a file to postgres when we are root.
func chownFileToPostgres(file string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("no postgres user (is the postgresql package installed?): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(file, uid, gid)
}

// chownToPostgres gives the data dir to postgres (as root) and makes sure
// every parent is traversable by it.
func chownToPostgres(dataDir string) error {
	if os.Geteuid() != 0 {
		return nil
	}
	if err := chownFileToPostgres(dataDir); err != nil {
		return err
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return err
	}
	for p := filepath.Dir(dataDir); p != "/"; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			if err := os.Chmod(p, fi.Mode().Perm()|0o011); err != nil {
				return fmt.Errorf("%s must be traversable by the postgres user: %w", p, err)
			}
		}
	}
	return nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("error opening lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("error locking %s: %w", path, err)
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(port int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// Tool returns the path of a PostgreSQL client program (pgbench, psql) from
// the newest installed server binaries, or from PATH.
func Tool(name string) (string, error) {
	if d := findBinaries(); d != "" && isFile(filepath.Join(d, name)) {
		return filepath.Join(d, name), nil
	}
	return exec.LookPath(name)
}
