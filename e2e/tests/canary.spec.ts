import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// A canary deploy (contract §11) with the built-in web-service-canary:
// the environments page shows the canary's share while it runs, the run
// page draws each analysis against its threshold and each shift's share.
// A fresh app per run: nothing here depends on other specs.
const app = `can${Date.now().toString(36).slice(-5)}`;

async function deploy(page: Page, pipeline: string, version: string): Promise<string> {
  await page.goto(`/tasks/new?pipeline=${pipeline}`);
  await page.getByTestId('field-app').fill(app);
  await page.getByTestId('field-version').fill(version);
  await page.getByTestId('field-env').selectOption('staging');
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  return page.url().split('/').pop()!;
}

const state = (page: Page) => page.locator('#task-state [data-testid="state-badge"]');
const chart = (page: Page, s: string) => page.locator(`[data-testid="analysis-chart"][data-step="${s}"]`);

async function shots(page: Page, name: string, url: string) {
  const small = await page.context().browser()!.newContext({ viewport: { width: 390, height: 844 }, storageState: await page.context().storageState() });
  const phone = await small.newPage();
  await phone.goto(url);
  await page.setViewportSize({ width: 1400, height: 900 });
  await page.screenshot({ path: `/tmp/canary-${name}-1400.png`, fullPage: true });
  await phone.screenshot({ path: `/tmp/canary-${name}-390.png`, fullPage: true });
  await small.close();
}

test('a healthy canary shows its share on the environments page and its measurements on the run page', async ({ browser }) => {
  test.setTimeout(180_000);
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 900 });
  await deploy(dev, 'web-service', '1.0.0');
  await expect(state(dev)).toHaveAttribute('data-state', 'completed');

  const id = await deploy(dev, 'web-service-canary', '2.0.0');
  const envs = await dev.context().newPage();
  await envs.setViewportSize({ width: 1400, height: 900 });
  await envs.goto('/environments?pipeline=web-service-canary');
  // The share moves live (the page asks every 2 s) as the shifts do.
  const share = envs.locator(`[data-testid="canary-share"][data-host="${app}.staging"]`);
  await expect(share).toContainText('2.0.0 at 20 %', { timeout: 45_000 });
  await shots(envs, 'environments', '/environments?pipeline=web-service-canary');
  await expect(share).toContainText('2.0.0 at 50 %', { timeout: 45_000 });

  // The run page, live: a chart per analysis, three passing measurements each.
  await expect(chart(dev, 'analyse_20').locator('[data-testid="analysis-point"]')).toHaveCount(3, { timeout: 45_000 });
  await expect(state(dev)).toHaveAttribute('data-state', 'completed', { timeout: 60_000 });
  for (const s of ['analyse_20', 'analyse_50']) {
    await expect(chart(dev, s).locator('[data-testid="analysis-point"][data-ok="true"]')).toHaveCount(3);
    await expect(chart(dev, s).getByTestId('analysis-summary')).toContainText('3 of 3 measurements taken, 0 failed; wants error_rate <= 0.05');
  }
  await expect(dev.locator('[data-testid="gantt-row"][data-step="shift_20"] [data-testid="shift-weight"]')).toHaveText('→ 20 %');
  await expect(dev.locator('[data-testid="gantt-row"][data-step="promote"] [data-testid="shift-weight"]')).toHaveText('→ 100 %');
  // Both analyses open for the picture (a step closes when it ends).
  await dev.locator('#step-5 details, #step-7 details').evaluateAll((ds) => ds.forEach((d) => ((d as HTMLDetailsElement).open = true)));
  await shots(dev, 'run-healthy', `/tasks/${id}`);

  // Promoted: every request reaches 2.0.0, and the share is gone.
  await envs.reload();
  await expect(envs.locator(`[data-testid="canary-share"][data-host="${app}.staging"]`)).toHaveCount(0);
});

test('a failing canary is measured, fails its analysis and rolls back', async ({ browser }) => {
  test.setTimeout(180_000);
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 900 });
  const failApp = `${app}f`;
  await dev.goto('/tasks/new?pipeline=web-service');
  await dev.getByTestId('field-app').fill(failApp);
  await dev.getByTestId('field-version').fill('1.0.0');
  await dev.getByTestId('submit-task').click();
  await expect(state(dev)).toHaveAttribute('data-state', 'completed');

  await dev.goto('/tasks/new?pipeline=web-service-canary');
  await dev.getByTestId('field-app').fill(failApp);
  await dev.getByTestId('field-version').fill('2.0.0-errors');
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = dev.url().split('/').pop()!;
  await expect(state(dev)).toHaveAttribute('data-state', 'failed', { timeout: 60_000 });
  const c = chart(dev, 'analyse_20').first();
  await expect(c.locator('[data-testid="analysis-point"][data-ok="false"]')).toHaveCount(1);
  await expect(c.getByTestId('analysis-threshold')).toHaveCount(1);
  await expect(dev.getByTestId('task-error')).toContainText('analysis failed: error_rate');
  await expect(dev.locator('[data-testid="compensation-row"][data-step="shift_20"]')).toHaveAttribute('data-state', 'compensated');
  await expect(dev.locator('[data-testid="compensation-row"][data-step="deploy_canary"]')).toHaveAttribute('data-state', 'compensated');
  await shots(dev, 'run-failed', `/tasks/${id}`);

  const res = await dev.request.get('/', { headers: { Host: `${failApp}.staging.localhost` } });
  expect(await res.text()).toContain('demo app version 1.0.0');
});
