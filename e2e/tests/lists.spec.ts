import { test, expect, Page } from '@playwright/test';
import { signIn } from './helpers';



async function submitApprovalDemo(page: Page): Promise<string> {
  await page.goto('/tasks/new?pipeline=approval-demo');
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expect(page.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'awaiting_approval');
  return page.url().split('/').pop()!;
}

test('the task list filters and follows state changes live', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const id = await submitApprovalDemo(dev);

  const admin = await signIn(browser, 'admin@demo.local');
  await admin.goto('/tasks');
  await admin.getByTestId('filter-pipeline').selectOption('approval-demo');
  await admin.getByTestId('filter-apply').click();
  await expect(admin).toHaveURL(/pipeline=approval-demo/);
  const row = admin.locator(`#task-row-${id}`);
  await expect(row).toHaveAttribute('data-state', 'awaiting_approval');

  // The requester cancels; the admin's list follows without a reload.
  await dev.getByTestId('cancel-open').click();
  await dev.getByTestId('cancel-confirm').click();
  await expect(row).toHaveAttribute('data-state', 'cancelled');
  await expect(row.getByTestId('state-badge')).toHaveText('cancelled');

  // A new submission is announced rather than reshuffling the page.
  await submitApprovalDemo(dev);
  await expect(admin.getByTestId('new-tasks')).toBeVisible();
  await admin.screenshot({ path: 'test-results/task-list-live.png', fullPage: true });
});

test('an approver decides from "Needs my approval"', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const id = await submitApprovalDemo(dev);

  // The requester's own task is not in their inbox (four eyes).
  await dev.goto('/approvals');
  await expect(dev.locator(`[data-testid="inbox-item"][data-task="${id}"]`)).toHaveCount(0);

  const approver = await signIn(browser, 'approver@demo.local');
  await approver.getByTestId('nav-approvals').click();
  const item = approver.locator(`[data-testid="inbox-item"][data-task="${id}"]`);
  await expect(item).toContainText('dev@demo.local');
  await approver.screenshot({ path: 'test-results/approvals-inbox.png', fullPage: true });
  await item.getByTestId('inbox-comment').fill('ship it');
  await item.getByTestId('inbox-approve').click();
  await expect(approver.getByTestId('flash')).toContainText('Approved.');
  await expect(item).toHaveCount(0);

  await dev.goto(`/tasks/${id}`);
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
  await expect(dev.getByTestId('approval-decision')).toContainText('approved by approver@demo.local');
});
