import { Page } from '@playwright/test';
import { test, expect, addUser, signIn, unique } from './helpers';

// A team of its own, so the badge and the inbox count this spec's
// approvals only, whatever else runs beside it.
const suffix = unique();
const team = `inbox-${suffix}`;
const devEmail = `inbox-dev-${suffix}@e2e.test`;
const approverEmail = `inbox-approver-${suffix}@e2e.test`;
test.beforeAll(() => {
  addUser(devEmail, team, 'deployer');
  addUser(approverEmail, team, 'approver');
});

async function submitGated(page: Page, app: string, version: string, env: string): Promise<string> {
  await page.goto('/tasks/new?pipeline=gated-service');
  await page.getByTestId('field-app').fill(app);
  await page.getByTestId('field-version').fill(version);
  await page.getByTestId('field-env').selectOption(env);
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  return page.url().split('/').pop()!;
}

// The badge's number, 0 when it is not shown.
async function badge(page: Page): Promise<number> {
  const b = page.getByTestId('nav-approvals-count');
  return (await b.count()) === 0 ? 0 : Number(await b.textContent());
}

test('approvals say what changes and who decides; the badge counts them; the creator sees the wait', async ({ browser }) => {
  const dev = await signIn(browser, devEmail);
  const approver = await signIn(browser, approverEmail);

  // Version 1.0 reaches production after an approval: it is the current one.
  const first = await submitGated(dev, 'inbox-shop', '1.0.0', 'production');
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'awaiting_approval');
  await approver.goto('/approvals');
  let item = approver.locator(`[data-testid="inbox-item"][data-task="${first}"]`);
  await expect(item.getByTestId('inbox-change')).toContainText('version 1.0.0');
  await expect(item.getByTestId('inbox-change')).toContainText('first deploy of this target');
  await item.getByTestId('inbox-approve').click();
  await approver.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(approver.getByTestId('flash')).toContainText('Approved.');
  await dev.goto(`/tasks/${first}`);
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');

  // 1.1 waits: the approver sees 1.0.0 → 1.1.0 and a badge one higher.
  await approver.goto('/approvals');
  const before = await badge(approver);
  expect(before, 'a team of its own: nothing else waits for this approver').toBe(0);
  const second = await submitGated(dev, 'inbox-shop', '1.1.0', 'production');
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'awaiting_approval');
  await approver.setViewportSize({ width: 1400, height: 1000 });
  await approver.goto('/approvals');
  await expect(approver.getByTestId('nav-approvals-count')).toHaveText(String(before + 1));
  await expect(approver.getByTestId('inbox-item')).toHaveCount(before + 1);
  item = approver.locator(`[data-testid="inbox-item"][data-task="${second}"]`);
  await expect(item.getByTestId('inbox-target')).toHaveText('inbox-shop · production');
  await expect(item.getByTestId('inbox-change')).toHaveText(/version\s+1\.0\.0\s+→\s+1\.1\.0/);
  await expect(item.getByTestId('inbox-step')).toHaveText('release');
  await expect(item.getByTestId('inbox-deciders')).toHaveText(new RegExp(`any approver or admin, except ${devEmail.replace(/\./g, '\\.')} \\(who asked\\)`));
  await expect(item).not.toContainText('{"');
  await approver.screenshot({ path: '/tmp/lists-inbox-1400.png', fullPage: true });
  await approver.setViewportSize({ width: 390, height: 844 });
  await approver.screenshot({ path: '/tmp/lists-inbox-390.png', fullPage: true });
  // The badge is on every page.
  await approver.goto('/tasks');
  await expect(approver.getByTestId('nav-approvals-count')).toHaveText(String(before + 1));

  // The creator decides nothing here, but sees their deploy wait, for whom.
  await dev.goto('/approvals');
  await expect(dev.getByTestId('inbox-empty')).toContainText('Nothing for you to decide');
  const waiting = dev.locator(`[data-testid="waiting-item"][data-task="${second}"]`);
  await expect(waiting.getByTestId('inbox-change')).toHaveText(/1\.0\.0\s+→\s+1\.1\.0/);
  await expect(waiting.getByTestId('inbox-deciders')).toContainText('approver or admin');
  await expect(waiting.locator('form')).toHaveCount(0);

  // Deciding takes one off the badge.
  await approver.setViewportSize({ width: 1400, height: 1000 });
  await approver.goto('/approvals');
  await approver.locator(`[data-testid="inbox-item"][data-task="${second}"]`).getByTestId('inbox-reject').click();
  await approver.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(approver.getByTestId('flash')).toContainText('Rejected');
  expect(await badge(approver)).toBe(before);
});
