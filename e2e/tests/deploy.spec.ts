import { test, expect, Browser, Page } from '@playwright/test';

const password = process.env.FLIGHTDECK_DEV_PASSWORD ?? 'e2e-demo-password';
const port = Number(process.env.E2E_PORT ?? 18731);
// A fresh name per run: demo-app processes outlive the server on purpose
// (a restarted server adopts them), so runs must not share a host.
const app = `shop${Date.now().toString(36).slice(-5)}`;

async function signIn(browser: Browser, email: string): Promise<Page> {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto('/login');
  await page.getByTestId('login-email').fill(email);
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();
  await expect(page).toHaveURL(/\/tasks$/);
  return page;
}

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
  await expect(dev.getByTestId("log-tail")).toContainText(`Monitoring ${app}.staging every`);
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
