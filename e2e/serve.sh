#!/bin/sh
# Starts flightdeck for the Playwright run: a fresh database on the embedded
# PostgreSQL, demo data with a known password.
set -eu
BIN="${FLIGHTDECK_BIN:-../bin/flightdeck}"
# By default the test suite's own cluster (as go tool task test:go), the one
# cluster that runs without fsync; a folder given is used as it is.
durability=on
if [ -z "${FLIGHTDECK_DATA_DIR:-}" ]; then
  FLIGHTDECK_DATA_DIR=../.data/test
  durability=off
fi
export FLIGHTDECK_DATA_DIR
DATABASE_URL="$(FLIGHTDECK_DB_DURABILITY="$durability" "$BIN" db url --fresh "${E2E_DB_NAME:-flightdeck_e2e}")"
export DATABASE_URL
export FLIGHTDECK_DEV=1
# Demo apps deployed by the tests stop with the server instead of outliving it.
export FLIGHTDECK_LOCAL_STOP_ON_EXIT=1
# Parallel workers on two cores start demo apps slowly.
export FLIGHTDECK_LOCAL_HEALTH_TIMEOUT="${FLIGHTDECK_LOCAL_HEALTH_TIMEOUT:-60s}"
# A step still running when the run ends is handed back at once: waiting
# for it only delays the end of the run.
export FLIGHTDECK_GRACE="${FLIGHTDECK_GRACE:-1s}"
export FLIGHTDECK_DEV_PASSWORD="${FLIGHTDECK_DEV_PASSWORD:-e2e-demo-password}"
# Eight slots: a spec may leave tasks running (a rollout, a canary) that the
# next spec on this worker's server must not queue behind.
exec "$BIN" serve --addr "127.0.0.1:${E2E_PORT:-18731}" --workers 8
