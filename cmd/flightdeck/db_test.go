package main

import (
	"bytes"
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestDBURL: `flightdeck db url` starts the embedded cluster and prints a
// URL that works for the invoking user: it carries the generated password,
// without which the server lets nobody in.
func TestDBURL(t *testing.T) {
	t.Parallel()
	base, err := os.MkdirTemp("", "fd-db-url-")
	require.NoError(t, err)
	require.NoError(t, os.Chmod(base, 0o755))
	dir := filepath.Join(base, "data")
	getenv := func(k string) string { return map[string]string{"FLIGHTDECK_DATA_DIR": dir}[k] }
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = run(ctx, []string{"db", "stop"}, getenv, &bytes.Buffer{}, &bytes.Buffer{})
		_ = os.RemoveAll(base)
	})
	var out, errOut bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"db", "url"}, getenv, &out, &errOut), errOut.String())
	dbURL := strings.TrimSpace(out.String())
	c, err := pgx.Connect(t.Context(), dbURL)
	require.NoError(t, err)
	require.NoError(t, c.Close(t.Context()))

	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	u.User = url.User("postgres")
	c, err = pgx.Connect(t.Context(), u.String())
	if err == nil {
		_ = c.Close(t.Context())
	}
	require.Error(t, err, "no password, no way in")

	// `db url --fresh NAME` on this default (durable, least-privilege)
	// cluster: the app role may not create databases, so the database is
	// made by the cluster's superuser and handed to the app role. Before:
	// "permission denied to create database".
	fresh := func() string {
		var out, errOut bytes.Buffer
		require.NoError(t, run(t.Context(), []string{"db", "url", "--fresh", "scratch_one"}, getenv, &out, &errOut), errOut.String())
		return strings.TrimSpace(out.String())
	}
	freshURL := fresh()
	c, err = pgx.Connect(t.Context(), freshURL)
	require.NoError(t, err)
	var who, owner string
	require.NoError(t, c.QueryRow(t.Context(), `SELECT current_user, pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()`).Scan(&who, &owner))
	require.Equal(t, "flightdeck", who, "the app role's URL")
	require.Equal(t, "flightdeck", owner, "the app role owns it")
	_, err = c.Exec(t.Context(), `CREATE TABLE leftover (x int)`)
	require.NoError(t, err)
	require.NoError(t, c.Close(t.Context()))
	require.Equal(t, freshURL, fresh(), "again: same URL")
	c, err = pgx.Connect(t.Context(), freshURL)
	require.NoError(t, err)
	defer c.Close(context.Background())
	var tables int
	require.NoError(t, c.QueryRow(t.Context(), `SELECT count(*) FROM pg_tables WHERE tablename = 'leftover'`).Scan(&tables))
	require.Zero(t, tables, "fresh: dropped and made again")
}
