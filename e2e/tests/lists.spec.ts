import { Page, WebSocketRoute } from '@playwright/test';
import { test, expect, signIn } from './helpers';



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
  // Its run time ticks while it waits.
  const clock = row.getByTestId('task-duration').locator('.clock');
  const shown = await clock.textContent();
  await expect(clock).not.toHaveText(shown!);

  // The requester cancels; the admin's list follows without a reload.
  await dev.getByTestId('cancel-open').click();
  await dev.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(row).toHaveAttribute('data-state', 'cancelled');
  await expect(row.getByTestId('state-badge')).toHaveText('cancelled');

  // A new submission is announced rather than reshuffling the page.
  await submitApprovalDemo(dev);
  await expect(admin.getByTestId('new-tasks')).toBeVisible();
  await admin.screenshot({ path: 'test-results/task-list-live.png', fullPage: true });
});

test('the task list catches up after its socket drops', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const id = await submitApprovalDemo(dev);

  // The admin's list socket goes through the test, which can drop it and
  // hold its reconnect back until a row has changed.
  const admin = await signIn(browser, 'admin@demo.local');
  const sockets: WebSocketRoute[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await admin.routeWebSocket(/\/tasks\/ws/, async (ws) => {
    sockets.push(ws);
    if (sockets.length > 1) await released;
    ws.connectToServer();
  });
  await admin.goto('/tasks?pipeline=approval-demo');
  const row = admin.locator(`#task-row-${id}`);
  await expect(row).toHaveAttribute('data-state', 'awaiting_approval');
  await expect.poll(() => sockets.length).toBe(1);

  // 1012 (service restart): the page reconnects, as after a server restart.
  await sockets[0].close({ code: 1012, reason: 'dropped by the test' });
  await expect.poll(() => sockets.length).toBe(2);
  await dev.getByTestId('cancel-open').click();
  await dev.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'cancelled');
  await expect(row).toHaveAttribute('data-state', 'awaiting_approval'); // no socket: still as it was
  // A task submitted through the API while the socket is down is
  // announced when it reconnects: the notice counts from the page's load.
  const status = await dev.evaluate(async () => {
    const csrf = document.querySelector<HTMLMetaElement>('meta[name="csrf-token"]')!.content;
    const res = await fetch('/api/v1/tasks', {
      method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrf },
      body: JSON.stringify({ kind: 'deploy', pipeline: 'approval-demo' }),
    });
    return res.status;
  });
  expect(status).toBe(202);
  await expect(admin.getByTestId('new-tasks')).toHaveCount(0);

  release();
  await expect(row).toHaveAttribute('data-state', 'cancelled');
  await expect(row.getByTestId('state-badge')).toHaveText('cancelled');
  await expect(admin.getByTestId('new-tasks')).toBeVisible();
  await admin.screenshot({ path: '/tmp/edges-list-caught-up.png', fullPage: true });
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
  await approver.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(approver.getByTestId('flash')).toContainText('Approved.');
  await expect(item).toHaveCount(0);

  await dev.goto(`/tasks/${id}`);
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
  await expect(dev.getByTestId('approval-decision')).toContainText('approved by approver@demo.local');
});

test('the task list tells deploys apart: target, version, duration, who, when, full id', async ({ browser }) => {
  const context = await browser.newContext();
  await context.grantPermissions(['clipboard-read', 'clipboard-write']);
  const dev = await context.newPage();
  await dev.goto('/login');
  await dev.getByTestId('login-email').fill('dev@demo.local');
  await dev.getByTestId('login-password').fill(process.env.FLIGHTDECK_DEV_PASSWORD ?? 'e2e-demo-password');
  await dev.getByTestId('login-submit').click();
  await expect(dev).toHaveURL(/\/tasks$/);

  const submit = async (app: string, version: string) => {
    await dev.goto('/tasks/new?pipeline=noop-service');
    await dev.getByTestId('field-app').fill(app);
    await dev.getByTestId('field-version').fill(version);
    await dev.getByTestId('submit-task').click();
    await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
    return dev.url().split('/').pop()!;
  };
  const shop = await submit('shop', '1.2.0');
  const cart = await submit('cart', '2.0.0-rc1');

  await dev.setViewportSize({ width: 1400, height: 900 });
  await dev.goto('/tasks');
  const heads = dev.getByTestId('task-list').locator('th');
  await expect(heads).toHaveText(['Task', 'Target', 'Version', 'State', 'Duration', 'Who', 'When']);
  for (const [id, target, version] of [[shop, 'shop · staging', '1.2.0'], [cart, 'cart · staging', '2.0.0-rc1']]) {
    const row = dev.locator(`#task-row-${id}`);
    await expect(row).toHaveAttribute('data-state', 'completed');
    await expect(row.getByTestId('task-target')).toHaveText(target);
    await expect(row.getByTestId('task-version')).toHaveText(version);
    await expect(row.getByTestId('task-duration')).toHaveText(/^\d+(\.\d)? m?s$/); // under a second in ms
    await expect(row.getByTestId('task-who')).toHaveText('dev@demo.local');
    await expect(row.getByTestId('task-when').locator('time')).toHaveAttribute('title', /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/);
    await expect(row.getByTestId('task-id')).toHaveText(id);
  }
  // Tasks created together differ in their full ids, which copy whole.
  await dev.locator(`#task-row-${cart}`).getByTestId('copy-id').click();
  await expect(dev.locator(`#task-row-${cart}`).getByTestId('copy-id')).toHaveText('Copied');
  expect(await dev.evaluate(() => navigator.clipboard.readText())).toBe(cart);
  await dev.screenshot({ path: '/tmp/lists-task-list-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 844 });
  await dev.screenshot({ path: '/tmp/lists-task-list-390.png', fullPage: true });
  await context.close();
});
