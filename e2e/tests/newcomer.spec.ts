import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// A newcomer's first minutes (issue 26): every pipeline reachable, every
// form accepts its own defaults, no inline handler the CSP would block,
// mistyped addresses lead somewhere, the environments page, and the task
// list on a phone.

// Its tests share nothing, and they are long: they spread over the workers.
test.describe.configure({ mode: 'parallel' });

const port = Number(process.env.E2E_PORT ?? 18731);
const run = Date.now().toString(36).slice(-5);

// Required fields without a default, filled as a person would.
const samples: Record<string, string> = { app: `nc${run}`, site: `nc${run}`, version: '1.2.3', port: '8080', regions: 'eu-west-1\nus-east-1' };

// cspErrors collects the console's refusals by the page's CSP.
function cspErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) errors.push(msg.text());
  });
  return errors;
}

async function inlineHandlers(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const found: string[] = [];
    document.querySelectorAll('*').forEach((el) => {
      for (const a of Array.from(el.attributes)) if (/^on/i.test(a.name)) found.push(`<${el.tagName} ${a.name}>`);
    });
    return found;
  });
}

test('the pipeline picker works under the CSP and /pipelines links every form', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  await dev.setViewportSize({ width: 1400, height: 900 });
  const errors = cspErrors(dev);
  await dev.goto('/tasks/new');
  await expect(dev.getByTestId('field-app')).toBeVisible();
  await dev.getByTestId('pipeline-select').selectOption('showcase');
  await expect(dev).toHaveURL(/\/tasks\/new\?pipeline=showcase$/);
  await expect(dev.getByTestId('field-regions')).toBeVisible();
  await dev.getByTestId('pipeline-select').selectOption('canary');
  await expect(dev).toHaveURL(/pipeline=canary$/);
  await dev.screenshot({ path: 'test-results/newcomer-form-canary-1400.png', fullPage: true });

  await dev.goto('/pipelines');
  const names = await dev.locator('[data-testid="pipeline"]').evaluateAll((els) => els.map((e) => e.id.replace(/^pipeline-/, '')));
  expect(names.length).toBeGreaterThan(5);
  await dev.screenshot({ path: 'test-results/newcomer-pipelines-1400.png' });
  for (const name of names) {
    await dev.goto('/pipelines');
    await dev.locator(`#pipeline-${name}`).getByTestId('pipeline-submit').click();
    await expect(dev).toHaveURL(`/tasks/new?pipeline=${encodeURIComponent(name)}`);
    await expect(dev.getByTestId('pipeline-select')).toHaveValue(name);
  }
  for (const path of ['/tasks', '/tasks/new', '/pipelines', '/environments', '/approvals', '/dashboard', '/agent', '/webhooks']) {
    await dev.goto(path);
    expect(await inlineHandlers(dev), path).toEqual([]);
  }
  expect(errors).toEqual([]);
});

test('a mistyped pipeline or task is a page with a way back', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const res = await dev.goto('/tasks/new?pipeline=web-servic');
  expect(res!.status()).toBe(404);
  await expect(dev.getByRole('heading', { level: 1 })).toHaveText('No such pipeline');
  await expect(dev.getByTestId('error-page')).toContainText('There is no pipeline named "web-servic".');
  await dev.screenshot({ path: 'test-results/newcomer-no-such-pipeline.png' });
  await dev.getByTestId('error-back').click();
  await expect(dev).toHaveURL(/\/pipelines$/);

  expect((await dev.goto('/tasks/00000000-0000-4000-8000-000000000000'))!.status()).toBe(404);
  await expect(dev.getByRole('heading', { level: 1 })).toHaveText('No such task');
  await dev.getByTestId('error-back').click();
  await expect(dev).toHaveURL(/\/tasks$/);
});

test('every pipeline form submits with its own defaults', async ({ browser }) => {
  test.setTimeout(180_000);
  const dev = await signIn(browser, 'dev@demo.local');
  await dev.goto('/tasks/new');
  const names = await dev.getByTestId('pipeline-select').locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  expect(names).toEqual(expect.arrayContaining(['web-service', 'canary', 'showcase', 'noop-service']));
  const ids: string[] = [];
  for (const name of names) {
    await dev.goto(`/tasks/new?pipeline=${encodeURIComponent(name)}`);
    const fields = dev.getByTestId('task-form').locator('[data-testid^="field-"][required]');
    for (const field of await fields.all()) {
      if ((await field.inputValue()) !== '') continue;
      const id = (await field.getAttribute('data-testid'))!.replace(/^field-/, '');
      expect(samples[id], `a sample for ${name}'s required ${id}`).toBeDefined();
      await field.fill(samples[id]);
    }
    if (name === 'showcase') {
      // The list's default, one per line, as the form shows it.
      await expect(dev.getByTestId('field-regions')).toHaveValue('eu-west-1\nus-east-1\nap-south-1');
      await expect(dev.getByTestId('hint-regions')).toContainText('one per line or comma-separated');
    }
    await dev.getByTestId('submit-task').click();
    await expect(dev, `${name} submits as shown`).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
    ids.push(dev.url().split('/').pop()!);
  }
  // Cancelled once submitted, since they would take this worker's server's
  // slots for a minute (a rollout, a canary's analyses, a long log) and
  // keep the next spec's deploys waiting; an ended one answers 409.
  const csrf = (await dev.locator('meta[name="csrf-token"]').getAttribute('content')) ?? '';
  for (const id of ids) {
    const res = await dev.request.post(`/api/v1/tasks/${id}/cancel`, { headers: { 'X-CSRF-Token': csrf } });
    expect([202, 409], `cancel ${id}: ${await res.text()}`).toContain(res.status());
  }
});

test('the environments page shows health and links the deployed app', async ({ browser }) => {
  test.setTimeout(120_000);
  const admin = await signIn(browser, 'admin@demo.local');
  await admin.setViewportSize({ width: 1400, height: 900 });
  const app = `hc${run}`;
  await admin.goto('/tasks/new?pipeline=web-service');
  await admin.getByTestId('field-app').fill(app);
  await admin.getByTestId('field-version').fill('1.0.0');
  await admin.getByTestId('submit-task').click();
  await expect(admin.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed', { timeout: 60_000 });

  const target = admin.locator(`[data-testid="environment"][data-target="app=${app} env=staging"]`);
  await expect.poll(async () => {
    await admin.goto('/environments?pipeline=web-service');
    return target.getByTestId('env-health').locator('[data-state]').getAttribute('data-state');
  }, { timeout: 30_000 }).toBe('healthy');
  const link = target.getByTestId('env-app-link');
  await expect(link).toHaveAttribute('href', `http://${app}.staging.localhost:${port}/`);
  await admin.screenshot({ path: 'test-results/newcomer-environments-1400.png', fullPage: true });
  await admin.setViewportSize({ width: 390, height: 844 });
  expect(await admin.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await admin.screenshot({ path: 'test-results/newcomer-environments-390.png', fullPage: true });

  const served = await admin.goto((await link.getAttribute('href'))!);
  expect(served!.status()).toBe(200);
  expect(await served!.text()).toContain('1.0.0');
});

test('at 390 px the task list is cards with state, target, version and when', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 390, height: 844 });
  await dev.goto('/tasks/new?pipeline=noop-service');
  await dev.getByTestId('field-app').fill(`card${run}`);
  await dev.getByTestId('field-version').fill('4.5.6');
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = dev.url().split('/').pop()!;
  await dev.goto('/tasks');
  const row = dev.locator(`#task-row-${id}`);
  await expect(row.getByTestId('task-version')).toContainText('4.5.6');
  for (const part of [row.getByTestId('state-badge'), row.getByTestId('task-target'), row.getByTestId('task-version'),
    row.getByTestId('task-when'), row.getByTestId('task-link')]) {
    await expect(part).toBeVisible();
    const box = (await part.boundingBox())!;
    expect(box.x).toBeGreaterThanOrEqual(0);
    expect(box.x + box.width, await part.textContent() ?? '').toBeLessThanOrEqual(390);
  }
  // A card: the state sits beside the task's name, the rest below it.
  const link = (await row.getByTestId('task-link').boundingBox())!;
  const badge = (await row.getByTestId('state-badge').boundingBox())!;
  const version = (await row.getByTestId('task-version').boundingBox())!;
  expect(Math.abs(badge.y - link.y)).toBeLessThan(20);
  expect(version.y).toBeGreaterThan(link.y + link.height - 1);
  expect(await dev.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  const wrap = dev.locator('.table-wrap');
  expect(await wrap.evaluate((el) => el.scrollWidth <= el.clientWidth)).toBe(true);
  await dev.screenshot({ path: 'test-results/newcomer-tasks-390.png', fullPage: true });
  await dev.setViewportSize({ width: 1400, height: 900 });
  await dev.screenshot({ path: 'test-results/newcomer-tasks-1400.png' });
});
