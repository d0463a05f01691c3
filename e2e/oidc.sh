#!/bin/sh
# Starts the fake OpenID Connect provider (internal/oidctest) for the
# Playwright run: flightdeck reads its discovery document at start, so it
# runs first. FAKEOIDC_BIN names a built one; otherwise it is built here.
set -eu
BIN="${FAKEOIDC_BIN:-../bin/fakeoidc}"
if [ -z "${FAKEOIDC_BIN:-}" ]; then
  (cd .. && go build -o bin/fakeoidc ./internal/oidctest/cmd/fakeoidc)
fi
exec "$BIN" --addr "127.0.0.1:${E2E_OIDC_PORT}" --client-id flightdeck --client-secret e2e-client-secret
