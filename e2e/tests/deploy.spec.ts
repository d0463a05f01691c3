import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

const port = Number(process.env.E2E_PORT ?? 18731);
// A fresh name per run: demo-app processes outlive the server on purpose
// (a restarted server adopts them), so runs must not share a host.
const app = `shop${Date.now().toString(36).slice(-5)}`;


async function deploy(page: Page, version: string) {
  await page.goto('/tasks/new?pipeline=web-service');
  await page.getByTestId('field-app').fill(app);
  await page.getByTestId('field-version').fill(version);
  await page.getByTestId('field-env').selectOption('staging');
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
}

const step = (page: Page, name: string) => page.locator(`[data-testid="step-row"][data-step="${name}"]`);

test('web-service deploys on this host; a broken version rolls back and v1 keeps serving', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local');
  const state = dev.locator('#task-state [data-testid="state-badge"]');

  await deploy(dev, '1.0.0');
  // The page follows the steps live over its socket.
  for (const s of ['create_dns', 'issue_cert', 'deploy_container', 'configure_monitoring']) {
    await expect(step(dev, s)).toHaveAttribute('data-state', 'completed');
  }
  await expect(state).toHaveAttribute('data-state', 'completed');
  await expect(dev.getByTestId('progress-text')).toContainText('4 of 4 steps');
  await expect(dev.locator("#step-4-log")).toContainText(`Monitoring ${app}.staging every`);
  await dev.screenshot({ path: 'test-results/deploy-v1-completed.png', fullPage: true });

  // Chromium resolves *.localhost to loopback: the app is one URL away.
  const site = await dev.context().newPage();
  const appURL = `http://${app}.staging.localhost:${port}/`;
  await site.goto(appURL);
  await expect(site.getByTestId('demoapp-version')).toHaveText('demo app version 1.0.0');
  await site.screenshot({ path: 'test-results/deploy-v1-app.png' });

  await deploy(dev, '0.0.0-broken');
  await expect(state).toHaveAttribute('data-state', 'failed');
  await expect(step(dev, 'deploy_container')).toHaveAttribute('data-state', 'failed');
  await expect(dev.locator('[data-testid="compensation-row"][data-step="issue_cert"]')).toHaveAttribute('data-state', 'compensated');
  await expect(dev.locator('[data-testid="compensation-row"][data-step="create_dns"]')).toHaveAttribute('data-state', 'compensated');
  await expect(dev.getByTestId('task-error')).toContainText('health check failed');
  await dev.screenshot({ path: 'test-results/deploy-broken-rolled-back.png', fullPage: true });

  await site.reload();
  await expect(site.getByTestId('demoapp-version')).toHaveText('demo app version 1.0.0');
  await site.screenshot({ path: 'test-results/deploy-v1-still-serving.png' });

  // Any request to the server's address with that Host header works too.
  const res = await dev.request.get(`http://127.0.0.1:${port}/`, { headers: { Host: `${app}.staging.localhost:${port}` } });
  expect(res.status()).toBe(200);
  expect(await res.text()).toContain('demo app version 1.0.0');
  const crl = await dev.request.get('/local/ca.crl');
  expect(crl.status()).toBe(200);
  expect(crl.headers()['content-type']).toBe('application/pkix-crl');
});

async function deployTo(page: Page, appName: string, version: string, env: string) {
  await page.goto('/tasks/new?pipeline=web-service');
  await page.getByTestId('field-app').fill(appName);
  await page.getByTestId('field-version').fill(version);
  await page.getByTestId('field-env').selectOption(env);
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  return page.url().split('/').pop()!;
}

test('a production deploy waits for a second person, who approves it live', async ({ browser }) => {
  test.setTimeout(120_000);
  const prodApp = `${app}p`;
  const dev = await signIn(browser, 'dev@demo.local');
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  const id = await deployTo(dev, prodApp, '2.0.0', 'production');
  await expect(state).toHaveAttribute('data-state', 'awaiting_approval');
  await expect(step(dev, 'issue_cert')).toHaveAttribute('data-state', 'completed');
  await expect(step(dev, 'deploy_container')).toHaveAttribute('data-state', 'pending');
  // The requester cannot decide their own deploy.
  await expect(dev.getByTestId('approve')).toHaveCount(0);
  await expect(dev.getByTestId('approval-why-not')).toContainText('four eyes');

  const approver = await signIn(browser, 'approver@demo.local');
  await approver.goto(`/tasks/${id}`);
  await approver.getByTestId('approval-comment').fill('prod window open');
  await approver.getByTestId('approve').click();
  await approver.getByTestId('confirm-ok').click(); // the dialog asks first

  // The requester's page follows without a reload, to the end.
  await expect(state).toHaveAttribute('data-state', 'completed');
  await expect(step(dev, 'deploy_container')).toHaveAttribute('data-state', 'completed');
  await expect(dev.getByTestId('approval-decision')).toContainText('approved by approver@demo.local');
  await dev.screenshot({ path: 'test-results/deploy-production-approved.png', fullPage: true });
  const site = await dev.context().newPage();
  await site.goto(`http://${prodApp}.production.localhost:${port}/`);
  await expect(site.getByTestId('demoapp-version')).toHaveText('demo app version 2.0.0');
});

test('cancelling a production deploy undoes its steps in reverse order', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local');
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  const id = await deployTo(dev, `${app}c`, '3.0.0', 'production');
  await expect(state).toHaveAttribute('data-state', 'awaiting_approval');
  await dev.getByTestId('cancel-open').click();
  await dev.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(state).toHaveAttribute('data-state', 'cancelled');
  const lane = dev.locator('[data-testid="compensation-row"]');
  await expect(lane).toHaveCount(2);
  await expect(lane.nth(0)).toHaveAttribute('data-step', 'issue_cert');
  await expect(lane.nth(1)).toHaveAttribute('data-step', 'create_dns');
  await expect(lane.nth(0)).toHaveAttribute('data-state', 'compensated');
  await expect(lane.nth(1)).toHaveAttribute('data-state', 'compensated');
  await dev.screenshot({ path: 'test-results/deploy-cancelled-compensated.png', fullPage: true });

  // The event log says the same order: the certificate first, then the route.
  const res = await dev.request.get(`/api/v1/tasks/${id}/events`);
  expect(res.status()).toBe(200);
  const events: { type: string; step_name: string }[] = (await res.json()).events;
  const undone = events.filter(e => e.type === 'step.compensated').map(e => e.step_name);
  expect(undone).toEqual(['issue_cert', 'create_dns']);
});
