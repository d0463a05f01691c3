import { test, expect, Page } from '@playwright/test';
import { signIn } from './helpers';

// guarded-service (e2e/pipelines) deploys into e2e-staging, which promotes
// to e2e-prod (two reviewers, versions like 1.2.3). Fresh apps per run keep
// this spec apart from the others, which share the team.
const suffix = Date.now().toString(36).slice(-5);
const app = `ov${suffix}`;
const nightly = `ovn${suffix}`;

async function csrf(p: Page): Promise<string> {
  return (await p.locator('meta[name="csrf-token"]').getAttribute('content')) ?? '';
}

// submit deploys over the API (the page's session) and returns the task id.
async function submit(p: Page, appName: string, version: string, stage: string): Promise<string> {
  const res = await p.request.post('/api/v1/tasks', {
    headers: { 'X-CSRF-Token': await csrf(p) },
    data: { kind: 'deploy', pipeline: 'guarded-service', params: { app: appName, version, stage } },
  });
  expect(res.status(), await res.text()).toBe(202);
  return (await res.json()).id;
}

async function completed(p: Page, id: string) {
  await expect.poll(async () => (await (await p.request.get(`/api/v1/tasks/${id}`)).json()).state,
    { timeout: 30_000 }).toBe('completed');
}

const cell = (p: Page, appName: string, env: string) =>
  p.locator(`[data-testid="ov-row-app=${appName}"] [data-testid="ov-cell-${env}"]`);

test('the overview: environments in promotion order, readiness, live', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 900 });
  await completed(dev, await submit(dev, app, '1.4.0', 'e2e-staging'));
  await completed(dev, await submit(dev, nightly, 'nightly-7', 'e2e-staging'));

  await dev.getByTestId('nav-overview').click();
  await expect(dev).toHaveURL(/\/overview$/);
  const heads = dev.locator('[data-testid="ov-pipeline-guarded-service"] [data-testid="ov-env-head"]');
  const names = await heads.allTextContents();
  expect(names.indexOf('e2e-staging')).toBeGreaterThanOrEqual(0);
  expect(names.indexOf('e2e-staging')).toBeLessThan(names.indexOf('e2e-prod'));

  // 1.4.0 in e2e-staging may go into e2e-prod now: the button is live.
  await expect(cell(dev, app, 'e2e-staging').getByTestId('ov-version')).toHaveText('1.4.0');
  const prod = cell(dev, app, 'e2e-prod');
  await expect(prod.getByTestId('ov-promote')).toHaveAttribute('data-state', 'ready');
  await expect(prod.getByTestId('ov-promote-button')).toBeEnabled();
  await expect(prod.getByTestId('ov-promote-button')).toHaveText('Promote 1.4.0 from e2e-staging');

  // e2e-prod takes versions like 1.2.3: the rule the submit applies
  // disables the button and says why.
  const refused = cell(dev, nightly, 'e2e-prod');
  await expect(refused.getByTestId('ov-promote')).toHaveAttribute('data-state', 'refused');
  await expect(refused.getByTestId('ov-promote-button')).toBeDisabled();
  await expect(refused.getByTestId('ov-why')).toContainText('e2e-prod takes a version like');

  // Live: a deploy submitted elsewhere shows up without a reload.
  await dev.evaluate(() => { (window as any).__kept = true; });
  const other = await signIn(browser, 'dev@demo.local');
  const next = await submit(other, app, '1.5.0', 'e2e-staging');
  await expect(cell(dev, app, 'e2e-staging').getByTestId('ov-version')).toHaveText('1.5.0');
  await completed(other, next);
  await expect(prod.getByTestId('ov-promote-button')).toHaveText('Promote 1.5.0 from e2e-staging');
  // A production deploy waits for its reviewers: the cell says so.
  await submit(other, app, '1.5.0', 'e2e-prod');
  await expect(prod.getByTestId('ov-activity')).toContainText('1.5.0 awaiting approval');
  expect(await dev.evaluate(() => (window as any).__kept)).toBe(true); // no reload happened

  await dev.screenshot({ path: '/tmp/overview-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 844 });
  await expect(cell(dev, app, 'e2e-staging').locator('.ov-env')).toBeVisible();
  const overflow = await dev.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow).toBeLessThanOrEqual(0);
  // One card per target, its environments in order.
  const envs = await dev.locator(`[data-testid="ov-row-app=${app}"] .ov-cell`).evaluateAll(
    (els) => els.map((e) => (e as HTMLElement).dataset.env));
  expect(envs.indexOf('e2e-staging')).toBeLessThan(envs.indexOf('e2e-prod'));
  await dev.screenshot({ path: '/tmp/overview-390.png', fullPage: true });
});
