import { defineConfig } from '@playwright/test';

const port = Number(process.env.E2E_PORT ?? 18731);

// Debian's chromium: test tools cannot download browsers here.
export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
  expect: { timeout: 15_000 },
  workers: 1,
  retries: 0,
  reporter: [['list']],
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
  webServer: {
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
    },
  },
});
