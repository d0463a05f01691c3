import { test as base, expect, Browser, Page } from '@playwright/test';
import { execFileSync } from 'node:child_process';

// test is Playwright's, with one addition every spec gets: the browser
// contexts a test opened (signIn makes one per person) are closed when it
// ends. A worker's browser outlives its tests, and pages left open kept
// their sockets and their one-second clocks going: by the end of a run each
// browser held dozens of live pages and used most of the machine's CPU.
export const test = base.extend<{ closeContexts: void }>({
  closeContexts: [async ({ browser }, use) => {
    await use();
    await Promise.all(browser.contexts().map((c) => c.close()));
  }, { auto: true }],
});
export { expect };

// The demo users' password (serve.sh sets FLIGHTDECK_DEV_PASSWORD).
export const password = process.env.FLIGHTDECK_DEV_PASSWORD ?? 'e2e-demo-password';

// signIn logs a demo user in, in a browser context of its own (so two
// people can act side by side; at a viewport size when given), and returns
// the task list page.
export async function signIn(browser: Browser, email: string, viewport?: { width: number; height: number }): Promise<Page> {
  const page = await (await browser.newContext(viewport ? { viewport } : {})).newPage();
  await page.goto('/login');
  await page.getByTestId('login-email').fill(email);
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();
  await expect(page).toHaveURL(/\/tasks$/);
  return page;
}

const bin = process.env.FLIGHTDECK_BIN ?? '../bin/flightdeck';

// addUser creates a person with the CLI in the worker's own database (the
// one serve.sh started this worker's server on; E2E_DB_NAME, set per worker
// by playwright.config.ts), in a team made for them when it is new: a spec
// that asserts on lists or counts signs in as a team of its own.
export function addUser(email: string, team: string, role = 'admin') {
  const dataDir = process.env.FLIGHTDECK_DATA_DIR ?? '../.data/test';
  const env = { ...process.env, FLIGHTDECK_DATA_DIR: dataDir, FLIGHTDECK_DB_DURABILITY: process.env.FLIGHTDECK_DATA_DIR ? 'on' : 'off' };
  const base = execFileSync(bin, ['db', 'url'], { env }).toString().trim();
  const url = new URL(base);
  url.pathname = '/' + (process.env.E2E_DB_NAME ?? 'flightdeck_e2e');
  execFileSync(bin, ['user', 'add', '--email', email, '--team', team, '--role', role, '--password', password],
    { env: { ...env, DATABASE_URL: url.toString() } });
}

// unique is a name part no other spec or run uses.
export function unique(): string {
  return `${Date.now().toString(36)}${Math.floor(Math.random() * 1e6).toString(36)}`;
}
