import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';



async function submitApprovalDemo(page: Page): Promise<string> {
  await page.goto('/tasks/new?pipeline=approval-demo');
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  return page.url();
}

test('an approver approves live; the requester cannot; the page updates without reload', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const url = await submitApprovalDemo(dev);
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  await expect(state).toHaveAttribute('data-state', 'awaiting_approval');
  await expect(dev.getByTestId('approval-why-not')).toContainText('four eyes');
  await expect(dev.getByTestId('approve')).toHaveCount(0);
  await dev.screenshot({ path: 'test-results/task-awaiting-approval.png', fullPage: true });

  const approver = await signIn(browser, 'approver@demo.local');
  await approver.goto(url);
  await approver.getByTestId('approval-comment').fill('ship it');
  await approver.getByTestId('approve').click();
  await approver.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(approver.getByTestId('flash')).toContainText('Approved.');

  // The requester's page follows over its socket.
  await expect(state).toHaveAttribute('data-state', 'completed');
  await expect(dev.getByTestId('approval-decision')).toContainText('approved by approver@demo.local');
  await expect(dev.locator('[data-testid="step-row"][data-step="release"]')).toHaveAttribute('data-state', 'completed');
  await expect(dev.getByTestId('progress-text')).toContainText('2 of 2 steps');
  await dev.screenshot({ path: 'test-results/task-completed.png', fullPage: true });
});

test('cancel while waiting undoes the completed step', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  await submitApprovalDemo(dev);
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  await expect(state).toHaveAttribute('data-state', 'awaiting_approval');
  await dev.getByTestId('cancel-open').click();
  await dev.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(state).toHaveAttribute('data-state', 'cancelled');
  await expect(dev.locator('[data-testid="compensation-row"][data-step="prepare"]')).toHaveAttribute('data-state', 'compensated');
  await expect(dev.getByTestId('task-error')).toContainText('cancelled by dev@demo.local');
  await expect(dev.getByTestId('approval')).toHaveAttribute('data-state', 'cancelled');
  await dev.screenshot({ path: 'test-results/task-cancelled.png', fullPage: true });
});

test('the dashboard updates without reload', async ({ browser }) => {
  const admin = await signIn(browser, 'admin@demo.local');
  await admin.goto('/dashboard');
  const waiting = admin.locator('[data-testid="stat-waiting"] .stat-value');
  const before = Number(await waiting.textContent());
  const dev = await signIn(browser, 'dev@demo.local');
  await submitApprovalDemo(dev);
  await expect(waiting).toHaveText(String(before + 1));
  await admin.screenshot({ path: 'test-results/dashboard.png', fullPage: true });
});
