import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// Words people read (issue 36, item 4) and the freezes and audit log as
// cards on a phone (item 5). Each test makes what it asserts on.

const state = (page: Page) => page.locator('#task-state [data-testid="state-badge"]');

// Nothing sits past the right edge of a 390 px screen.
async function fitsTheScreen(page: Page) {
  const over = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(over).toBeLessThanOrEqual(0);
}

test('a paused run says paused, its clock stops and the pause flash goes', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 1000 });
  await dev.goto('/tasks/new?pipeline=pausable');
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expect(state(dev)).toHaveAttribute('data-state', 'running');
  await expect(dev.getByTestId('task-clock-label')).toHaveText('running for');
  // The cancel dialog says what happens to the step running now.
  await dev.getByTestId('cancel-open').click();
  await expect(dev.getByTestId('confirm-dialog')).toContainText('not undone unless it sets compensate_on_failure');
  await dev.getByTestId('confirm-cancel').click();
  await dev.getByTestId('pause').click();
  await expect(state(dev)).toHaveAttribute('data-state', 'paused');
  await expect(dev.getByTestId('paused-card')).toBeVisible();
  await expect(dev.getByTestId('task-clock-label')).toHaveText('paused, waiting for someone to resume it');
  await expect(dev.locator('#task-header [data-testid="clock"]')).toHaveCount(0);
  // "Pause requested." does not stand above the Paused card.
  await expect(dev.getByTestId('flash')).not.toContainText('Pause requested');
  await dev.screenshot({ path: '/tmp/words-paused-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 844 });
  await fitsTheScreen(dev);
  await dev.screenshot({ path: '/tmp/words-paused-390.png', fullPage: true });
  await dev.setViewportSize({ width: 1400, height: 1000 });

  await dev.getByTestId('resume').click();
  await expect(state(dev)).toHaveAttribute('data-state', 'completed');
});

test('a skipped step reads "completed with 1 step skipped" on the run page and the list', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 1000 });
  await dev.goto('/tasks/new?pipeline=guided-failure');
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const url = dev.url();
  const id = url.split('/').pop();
  await expect(state(dev)).toHaveAttribute('data-state', 'paused');
  await expect(dev.getByTestId('task-clock-label')).toHaveText('paused: step smoke failed, waiting for a decision');
  await expect(dev.getByTestId('decision-expires')).toContainText('If nobody decides by');
  await expect(dev.getByTestId('decision-expires')).not.toContainText('UTC UTC');
  await dev.screenshot({ path: '/tmp/words-guided-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 844 });
  await fitsTheScreen(dev);
  await dev.screenshot({ path: '/tmp/words-guided-390.png', fullPage: true });
  await dev.setViewportSize({ width: 1400, height: 1000 });

  const approver = await signIn(browser, 'approver@demo.local', { width: 1400, height: 1000 });
  await approver.goto(url);
  await approver.getByTestId('skip-open').click();
  await approver.getByTestId('skip-comment').fill('known flaky health check, verified by hand');
  await approver.getByTestId('skip-confirm').click();
  for (const p of [approver, dev]) {
    await expect(state(p)).toHaveAttribute('data-state', 'completed');
    await expect(state(p)).toHaveText('completed with 1 step skipped');
  }
  await dev.goto('/tasks');
  const row = dev.locator(`#task-row-${id}`);
  await expect(row.getByTestId('state-badge')).toHaveText('completed with 1 step skipped');
  await expect(row).toHaveAttribute('data-state', 'completed');
});

test('the audit log reads as sentences, and as cards at 390 px', async ({ browser }) => {
  const admin = await signIn(browser, 'admin@demo.local', { width: 1400, height: 1000 });
  // Something to audit: the admin cancels a deploy that waits for an approver.
  await admin.goto('/tasks/new?pipeline=approval-demo');
  await admin.getByTestId('submit-task').click();
  await expect(admin).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = admin.url().split('/').pop() ?? '';
  await expect(state(admin)).toHaveAttribute('data-state', 'awaiting_approval');
  await admin.getByTestId('cancel-open').click();
  await admin.getByTestId('confirm-ok').click();
  await expect(state(admin)).toHaveAttribute('data-state', 'cancelled');
  // The flash that asked goes once the page shows the cancel.
  await expect(admin.getByTestId('flash')).not.toContainText('Cancel requested');

  await admin.goto('/audit?type=task.cancelled');
  const entry = admin.locator('[data-testid="audit-entry"]', { has: admin.locator(`a[href="/tasks/${id}"]`) });
  await expect(entry.getByTestId('audit-sentence')).toHaveText(/^admin@demo\.local cancelled the task while it was awaiting approval$/);
  await expect(entry.getByTestId('audit-detail')).toBeHidden(); // behind its toggle
  await entry.locator('details.audit-raw summary').click();
  await expect(entry.getByTestId('audit-detail')).toContainText('"state"');
  await admin.screenshot({ path: '/tmp/words-audit-1400.png', fullPage: true });

  await admin.setViewportSize({ width: 390, height: 844 });
  await fitsTheScreen(admin);
  const box = await entry.boundingBox();
  expect(box).not.toBeNull();
  expect(box!.x + box!.width).toBeLessThanOrEqual(390);
  await expect(entry.getByTestId('audit-task')).toBeInViewport();
  await admin.screenshot({ path: '/tmp/words-audit-390.png', fullPage: true });
});

test('a nightly freeze window is one row, and freezes are cards at 390 px', async ({ browser }) => {
  const admin = await signIn(browser, 'admin@demo.local', { width: 1400, height: 1000 });
  await admin.goto('/environments');
  const nightly = admin.locator('[data-testid="freeze"][data-environment="e2e-nightly"]');
  await expect(nightly).toHaveCount(1);
  await expect(nightly.getByTestId('freeze-recurring')).toHaveText('nightly 22:00–06:00, every day');
  await admin.getByTestId('freezes').screenshot({ path: '/tmp/words-freezes-1400.png' });
  await admin.screenshot({ path: '/tmp/words-environments-1400.png', fullPage: true });
  await admin.setViewportSize({ width: 390, height: 844 });
  await fitsTheScreen(admin);
  const box = await nightly.boundingBox();
  expect(box).not.toBeNull();
  expect(box!.x + box!.width).toBeLessThanOrEqual(390);
  await expect(nightly.getByText('e2e nightly window')).toBeVisible();
  await admin.getByTestId('freezes').screenshot({ path: '/tmp/words-freezes-390.png' });
});
