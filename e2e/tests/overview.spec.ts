import { test, expect, signIn } from './helpers';

// The overview (issue 36): every target × environment, staging before
// production, readiness to promote, kept current over its socket. A fresh
// app per run keeps runs apart.
const app = `ov${Date.now().toString(36).slice(-6)}`;

test('the overview shows a new deploy live and says what may be promoted', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 900 });
  await dev.goto('/overview');
  await expect(dev.getByTestId('nav-overview')).toHaveAttribute('aria-current', 'page');
  const row = dev.locator(`[data-testid="overview-row"][data-target="app=${app}"]`);
  await expect(row).toHaveCount(0);

  // Another tab deploys to staging: the open overview shows it without a reload.
  const other = await dev.context().newPage();
  await other.goto('/tasks/new?pipeline=guarded-service');
  await other.getByTestId('field-app').fill(app);
  await other.getByTestId('field-version').fill('2.4.0');
  await other.getByTestId('field-stage').selectOption('e2e-staging');
  await other.getByTestId('submit-task').click();
  await expect(other.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');

  await expect(row).toHaveCount(1, { timeout: 30_000 });
  const staging = row.locator('[data-testid="overview-cell"][data-env="e2e-staging"]');
  const prod = row.locator('[data-testid="overview-cell"][data-env="e2e-prod"]');
  await expect(staging.getByTestId('overview-version')).toContainText('2.4.0');
  // e2e-prod takes promotions from e2e-staging: ready, with the promote form there.
  await expect(prod).toHaveAttribute('data-ready', 'ready');
  await expect(prod.getByTestId('overview-ready')).toContainText('2.4.0 from e2e-staging is ready to promote');
  await expect(prod.getByTestId('env-promote')).toBeVisible();
  // the environments come in promotion order: staging's column before prod's
  const envs = await dev.locator('.ov-head .ov-env-name').allTextContents();
  expect(envs.indexOf('e2e-staging')).toBeLessThan(envs.indexOf('e2e-prod'));
  await dev.screenshot({ path: '/tmp/overview-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 844 });
  await expect(row.locator('.ov-cell-env').first()).toBeVisible();
  const width = await dev.evaluate(() => document.documentElement.scrollWidth);
  expect(width).toBeLessThanOrEqual(390);
  await dev.screenshot({ path: '/tmp/overview-390.png', fullPage: true });
});
