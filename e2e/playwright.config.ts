import { defineConfig } from '@playwright/test';
import { readdirSync, readFileSync } from 'node:fs';

// Every spec takes test from ./helpers, whose test closes the browser
// contexts a test opened: one that took Playwright's own would leave its
// pages running for the rest of its worker's tests.
for (const f of readdirSync(`${__dirname}/tests`).filter((n) => n.endsWith('.spec.ts'))) {
  if (/import\s*\{[^}]*\btest\b[^}]*\}\s*from\s*'@playwright\/test'/.test(readFileSync(`${__dirname}/tests/${f}`, 'utf8'))) {
    throw new Error(`tests/${f} imports test from '@playwright/test': import { test, expect } from './helpers' instead`);
  }
}

// Specs run in parallel workers, each against a flightdeck of its own
// (its own port and database, demo data included), so one spec's tasks,
// approvals and audit entries never show in another worker's lists. A
// worker's server is worker 0's port + 10 × its parallel index (its
// scripted model at + 3); the fake identity provider, which keeps no
// per-client state, is one for all at port + 2.
const base = Number(process.env.E2E_BASE_PORT ?? process.env.E2E_PORT ?? 18731);
process.env.E2E_BASE_PORT = String(base); // the config is read again in every worker
const llmBase = Number(process.env.E2E_LLM_BASE_PORT ?? process.env.E2E_LLM_PORT ?? base + 3);
process.env.E2E_LLM_BASE_PORT = String(llmBase);
const oidcPort = Number(process.env.E2E_OIDC_PORT ?? base + 2);
// Two cores: more workers than this only queue for them (E2E_WORKERS).
const workers = Number(process.env.E2E_WORKERS ?? 3);
const server = (i: number) => ({ port: base + 10 * i, llmPort: llmBase + 10 * i, db: `flightdeck_e2e_${i}` });

// Inside a worker (Playwright numbers them 0..workers-1 before it reads
// this file), the specs' process.env names that worker's server: specs
// read E2E_PORT, E2E_LLM_PORT and E2E_DB_NAME (the CLI helper) as before.
const own = process.env.TEST_PARALLEL_INDEX;
if (own !== undefined) {
  const s = server(Number(own));
  process.env.E2E_PORT = String(s.port);
  process.env.E2E_LLM_PORT = String(s.llmPort);
  process.env.E2E_DB_NAME = s.db;
}
const port = Number(process.env.E2E_PORT ?? base);

// Debian's chromium: test tools cannot download browsers here.
export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 15_000 },
  workers,
  // A spec file's tests run in order in one worker; the files spread over the workers.
  fullyParallel: false,
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
  },
  ...Array.from({ length: workers }, (_, i) => server(i)).map((s) => ({
    command: './serve.sh',
    url: `http://127.0.0.1:${s.port}/readyz`,
    timeout: 120_000,
    reuseExistingServer: false,
    // SIGTERM lets the server stop its demo apps (FLIGHTDECK_LOCAL_STOP_ON_EXIT).
    gracefulShutdown: { signal: 'SIGTERM', timeout: 10_000 },
    stdout: 'pipe',
    stderr: 'pipe',
    // Its own database on the test cluster, a scripted model (tests/ops-agent.spec.ts) and deploy pipelines without side effects.
    env: {
      E2E_PORT: String(s.port),
      E2E_DB_NAME: s.db,
      OPENAI_BASE_URL: `http://127.0.0.1:${s.llmPort}/v1`,
      FLIGHTDECK_PIPELINES: './pipelines',
      // Single sign-on through the fake provider; people without an account join demo as viewers.
      FLIGHTDECK_OIDC_ISSUER: `http://127.0.0.1:${oidcPort}`,
      FLIGHTDECK_OIDC_CLIENT_ID: 'flightdeck',
      FLIGHTDECK_OIDC_CLIENT_SECRET: 'e2e-client-secret',
      FLIGHTDECK_OIDC_AUTO_JOIN: 'demo:viewer',
      // tests/notifications.spec.ts sends a webhook test message to a receiver of its own on 127.0.0.1.
      FLIGHTDECK_WEBHOOK_ALLOW: '127.0.0.1',
    },
  }))],
});
