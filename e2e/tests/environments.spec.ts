import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// noop-service (e2e/pipelines) deploys without side effects; its target is
// app and env. A fresh app per run keeps runs apart.
const app = `env${Date.now().toString(36).slice(-5)}`;

async function deploy(page: Page, appName: string, version: string): Promise<string> {
  await page.goto('/tasks/new?pipeline=noop-service');
  await page.getByTestId('field-app').fill(appName);
  await page.getByTestId('field-version').fill(version);
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expectCompleted(page);
  return page.url().split('/').pop()!;
}

async function expectCompleted(page: Page) {
  await expect(page.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
}

const row = (page: Page, appName: string) =>
  page.locator(`[data-testid="environment"][data-target="app=${appName} env=staging"]`);

test('environments after two deploys and a rollback', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local');
  await dev.setViewportSize({ width: 1400, height: 900 });
  const v1 = await deploy(dev, app, '1.0.0');
  const v2 = await deploy(dev, app, '2.0.0');

  await dev.getByTestId('nav-environments').click();
  await expect(dev).toHaveURL(/\/environments$/);
  const target = row(dev, app);
  await expect(target.getByTestId('env-current')).toHaveText('2.0.0');
  await expect(target.getByTestId('env-current').locator('a')).toHaveAttribute('href', `/tasks/${v2}`);
  await expect(target.getByTestId('env-previous')).toContainText('1.0.0');
  await expect(target.getByTestId('env-activity')).toContainText('idle');
  await expect(target).toContainText('dev@demo.local');
  await dev.screenshot({ path: '/tmp/environments-1400.png', fullPage: true });

  // Every column has a heading.
  for (const th of await dev.locator('[data-testid="environments"] th').all()) {
    expect((await th.textContent())!.trim()).not.toBe('');
  }
  // Roll back: a re-run of the previous deploy, through the normal submit.
  await expect(target.getByTestId('env-rollback')).toHaveText('Roll back to 1.0.0');
  await target.getByTestId('env-rollback').click();
  // It asks first, saying what changes.
  await expect(dev.getByTestId('confirm-dialog')).toContainText(`Roll back app=${app} env=staging?`);
  await expect(dev.getByTestId('confirm-dialog')).toContainText('2.0.0 → 1.0.0');
  await dev.getByTestId('confirm-ok').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const rollback = dev.url().split('/').pop()!;
  expect(rollback).not.toBe(v1);
  await expect(dev.getByTestId('rerun-of')).toHaveAttribute('href', `/tasks/${v1}`);
  await expectCompleted(dev);

  await dev.goto('/environments?pipeline=noop-service');
  await expect(row(dev, app).getByTestId('env-current')).toHaveText('1.0.0');
  await expect(row(dev, app).getByTestId('env-current').locator('a')).toHaveAttribute('href', `/tasks/${rollback}`);
  await expect(row(dev, app).getByTestId('env-previous')).toContainText('2.0.0');
  // 2.0.0 is newer than what runs now: it is redeployed, not "rolled back to".
  await expect(row(dev, app).getByTestId('env-rollback')).toHaveText('Redeploy 2.0.0');

  // The history lists all three; any earlier one redeploys.
  await row(dev, app).getByTestId('env-history').locator('summary').click();
  await expect(row(dev, app).getByTestId('env-history-item')).toHaveCount(3);
  await expect(row(dev, app).getByTestId('env-redeploy')).toHaveCount(2);
  await dev.screenshot({ path: '/tmp/environments-1400-history.png', fullPage: true });

  const api = await dev.request.get('/api/v1/environments?pipeline=noop-service');
  expect(api.status()).toBe(200);
  const env = (await api.json()).environments.find((e: any) => e.target.app === app);
  expect(env.target).toEqual({ app, env: 'staging' });
  expect(env.current.task_id).toBe(rollback);
  expect(env.previous.task_id).toBe(v2);

  // A phone: a card per target, nothing scrolls sideways, and its health
  // and actions are on the screen, not in a table's hidden columns.
  await dev.setViewportSize({ width: 390, height: 844 });
  await dev.reload();
  await expect(row(dev, app)).toBeVisible();
  const width = await dev.evaluate(() => document.documentElement.scrollWidth);
  expect(width).toBeLessThanOrEqual(390);
  for (const testid of ['env-health', 'env-activity', 'env-rollback']) {
    const box = (await row(dev, app).getByTestId(testid).boundingBox())!;
    expect(box.x + box.width, testid).toBeLessThanOrEqual(390);
  }
  await dev.screenshot({ path: '/tmp/environments-390.png', fullPage: true });
});

test('a finished task re-runs from its page', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const first = await deploy(dev, `${app}r`, '3.1.4');
  await dev.getByTestId('rerun').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const again = dev.url().split('/').pop()!;
  expect(again).not.toBe(first);
  await expect(dev.getByTestId('rerun-of')).toHaveAttribute('href', `/tasks/${first}`);
  await expectCompleted(dev);
  const res = await dev.request.get(`/api/v1/tasks/${again}`);
  const body = await res.json();
  expect(body.rerun_of).toBe(first);
  expect(body.params).toEqual({ app: `${app}r`, version: '3.1.4', env: 'staging' });
  expect(body.created_by).toBe('dev@demo.local');
});
