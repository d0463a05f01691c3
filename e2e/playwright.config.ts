import { defineConfig } from '@playwright/test';

const port = Number(process.env.E2E_PORT ?? 18731);
// The fake identity provider (tests/sso.spec.ts); by default beside the
// server's port, so runs on other ports do not share it.
const oidcPort = Number(process.env.E2E_OIDC_PORT ?? port + 2);

// Debian's chromium: test tools cannot download browsers here.
export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 15_000 },
  workers: 1,
  retries: 0,
  reporter: [['list'], ['./slowest-reporter.ts']],
  outputDir: 'test-results',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    screenshot: 'only-on-failure',
    trace: 'off',
    launchOptions: {
      executablePath: '/usr/bin/chromium',
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    },
  },
  // The identity provider first: flightdeck reads its discovery document at start.
  webServer: [{
    command: './oidc.sh',
    url: `http://127.0.0.1:${oidcPort}/.well-known/openid-configuration`,
    timeout: 120_000,
    reuseExistingServer: false,
    gracefulShutdown: { signal: 'SIGTERM', timeout: 5_000 },
    stdout: 'pipe',
    stderr: 'pipe',
    env: { E2E_OIDC_PORT: String(oidcPort) },
  }, {
    command: './serve.sh',
    url: `http://127.0.0.1:${port}/readyz`,
    timeout: 120_000,
    reuseExistingServer: false,
    // SIGTERM lets the server stop its demo apps (FLIGHTDECK_LOCAL_STOP_ON_EXIT).
    gracefulShutdown: { signal: 'SIGTERM', timeout: 10_000 },
    stdout: 'pipe',
    stderr: 'pipe',
    // A scripted model (tests/ops-agent.spec.ts; named to run after auth.spec.ts, which expects an empty task list) and a deploy pipeline without side effects.
    env: {
      E2E_PORT: String(port),
      OPENAI_BASE_URL: `http://127.0.0.1:${process.env.E2E_LLM_PORT ?? 18734}/v1`,
      FLIGHTDECK_PIPELINES: './pipelines',
      // Single sign-on through the fake provider; people without an account join demo as viewers.
      FLIGHTDECK_OIDC_ISSUER: `http://127.0.0.1:${oidcPort}`,
      FLIGHTDECK_OIDC_CLIENT_ID: 'flightdeck',
      FLIGHTDECK_OIDC_CLIENT_SECRET: 'e2e-client-secret',
      FLIGHTDECK_OIDC_AUTO_JOIN: 'demo:viewer',
      // tests/notifications.spec.ts sends a webhook test message to a receiver of its own on 127.0.0.1.
      FLIGHTDECK_WEBHOOK_ALLOW: '127.0.0.1',
    },
  }],
});
