import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// A fresh app name per run: the deploy figures below count only its tasks'
// pipeline, whatever other specs left in the shared database.
const app = `dash${Date.now().toString(36).slice(-5)}`;

async function submit(page: Page, pipeline: string, fields: Record<string, string> = {}): Promise<string> {
  await page.goto(`/tasks/new?pipeline=${pipeline}`);
  for (const [name, value] of Object.entries(fields)) {
    await page.getByTestId(`field-${name}`).fill(value);
  }
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  return page.url().split('/').pop()!;
}

const state = (page: Page) => page.locator('#task-state [data-testid="state-badge"]');

test('every dashboard number links to the tasks it counts; cancelled is not failed; the charts have time axes', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  // Two deploys of a pipeline with a version parameter (a deploy pipeline).
  const deploys: string[] = [];
  for (const version of ['1.0.0', '1.0.1']) {
    const id = await submit(dev, 'noop-service', { app, version });
    await expect(state(dev)).toHaveAttribute('data-state', 'completed');
    deploys.push(id);
  }
  // A cancelled task: counted as cancelled, not failed.
  const cancelled = await submit(dev, 'approval-demo');
  await expect(state(dev)).toHaveAttribute('data-state', 'awaiting_approval');
  await dev.getByTestId('cancel-open').click();
  await dev.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(state(dev)).toHaveAttribute('data-state', 'cancelled');

  await dev.goto('/dashboard');
  const row = dev.locator('[data-testid="health-row"][data-pipeline="noop-service"]');
  await expect(row).toBeVisible();
  // approval-demo has neither a target nor a version: no DORA figures.
  await expect(dev.locator('[data-testid="health-row"][data-pipeline="approval-demo"]')).toHaveCount(0);

  // The deploys figure links to the list of exactly those deploys.
  const link = row.getByTestId('deploys');
  const count = Number(await link.textContent());
  expect(count).toBeGreaterThanOrEqual(2);
  await link.click();
  await expect(dev).toHaveURL(/\/tasks\?.*pipeline=noop-service/);
  await expect(dev).toHaveURL(/finished_after=/);
  await expect(dev.getByTestId('linked-filters')).toContainText('finished at or after');
  await expect(dev.getByTestId('task-row')).toHaveCount(Math.min(count, 50));
  for (const id of deploys) {
    await expect(dev.locator(`#task-row-${id}`)).toBeVisible();
  }

  // The hour's cancelled figure lists cancelled tasks only, ours among them.
  await dev.goto('/dashboard');
  await dev.getByTestId('cancelled-hour').click();
  await expect(dev).toHaveURL(/state=cancelled/);
  await expect(dev.locator(`#task-row-${cancelled}`)).toBeVisible();
  const states = await dev.getByTestId('task-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-state')));
  expect(new Set(states)).toEqual(new Set(['cancelled']));
  await dev.goto('/tasks?state=failed&finished_after=' + encodeURIComponent(new Date(Date.now() - 3600_000).toISOString().slice(0, 19) + 'Z'));
  await expect(dev.locator(`#task-row-${cancelled}`)).toHaveCount(0);

  // Time axes: the hour every ten minutes (HH:MM), the days by date.
  await dev.goto('/dashboard');
  const hour = dev.locator('[data-testid="throughput-chart"] [data-testid="chart-x-label"]');
  await expect(hour).toHaveCount(6);
  for (const label of await hour.allTextContents()) {
    expect(label).toMatch(/^\d\d:\d\d$/);
  }
  const today = new Date().toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
  await expect(dev.locator('[data-testid="daily-chart"] [data-testid="chart-x-label"]').last()).toHaveText(today);
  await expect(dev.locator('[data-testid="daily-chart"] [data-testid="chart-y-label"]')).not.toHaveText('0');

  // A bar of today links to today's tasks of its outcome.
  await dev.locator('[data-testid="daily-chart"] rect.bar-cancel').last().click();
  await expect(dev).toHaveURL(/state=cancelled.*finished_before=|finished_before=.*state=cancelled/);
  await expect(dev.locator(`#task-row-${cancelled}`)).toBeVisible();

  await dev.setViewportSize({ width: 1400, height: 900 });
  await dev.goto('/dashboard');
  await dev.screenshot({ path: '/tmp/dashboard-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 844 });
  await dev.goto('/dashboard');
  await dev.screenshot({ path: '/tmp/dashboard-390.png', fullPage: true });
});
