import { Page, Locator, WebSocketRoute } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// The run page tells a deploy's story: steps with their own live logs,
// states that say what is going on, the compensation lane, the failing
// step's output and a timeline.

async function submit(page: Page, pipeline: string, fields: Record<string, string | boolean> = {}) {
  await page.goto(`/tasks/new?pipeline=${pipeline}`);
  for (const [name, value] of Object.entries(fields)) {
    const field = page.getByTestId(`field-${name}`);
    if (typeof value === 'boolean') await field.setChecked(value);
    else await field.fill(value);
  }
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
}

// Its tests share nothing, and they are long: they spread over the workers.
test.describe.configure({ mode: 'parallel' });

const head = (page: Page, step: string) => page.locator(`[data-testid="step-row"][data-step="${step}"]`);

// How far the log box is from its bottom, in pixels.
const gap = (box: Locator) => box.evaluate((el: HTMLElement) => el.scrollHeight - el.scrollTop - el.clientHeight);
const lineCount = (box: Locator) => box.evaluate((el: HTMLElement) => el.children.length);

test('a live log that follows 1000 lines', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local');
  await submit(dev, 'long-log');
  await expect(head(dev, 'emit')).toHaveAttribute('data-state', 'running');
  const box = dev.locator('#step-1-log');
  await expect(box).toBeVisible(); // a running step opens by itself

  // While lines arrive, the box stays at its newest line.
  for (const n of [60, 150, 250]) {
    await expect.poll(() => lineCount(box)).toBeGreaterThanOrEqual(n);
    await expect.poll(() => gap(box), `at the bottom after ${n} lines`).toBeLessThan(8);
  }

  // A selection survives new lines.
  await box.evaluate((el: HTMLElement) => {
    const range = document.createRange();
    range.selectNodeContents(el.children[2]);
    const sel = window.getSelection()!;
    sel.removeAllRanges();
    sel.addRange(range);
  });
  const selected = await dev.evaluate(() => window.getSelection()!.toString());
  expect(selected).toBe('line 3');

  // The reader scrolls up: the box stays where they put it.
  await box.evaluate((el: HTMLElement) => { el.scrollTop = 40; });
  const before = await lineCount(box);
  await expect.poll(() => lineCount(box)).toBeGreaterThanOrEqual(before + 40);
  expect(await box.evaluate((el: HTMLElement) => el.scrollTop)).toBe(40);
  expect(await dev.evaluate(() => window.getSelection()!.toString())).toBe('line 3');
  expect(await dev.evaluate(() => window.getSelection()!.anchorNode!.isConnected)).toBe(true);
  await dev.screenshot({ path: 'test-results/run-live-log-scrolled-up.png' });

  // Back at the bottom, it follows again, to the end.
  await box.evaluate((el: HTMLElement) => { el.scrollTop = el.scrollHeight; });
  const again = await lineCount(box);
  await expect.poll(() => lineCount(box)).toBeGreaterThanOrEqual(again + 30);
  await expect.poll(() => gap(box)).toBeLessThan(8);
  await expect(head(dev, 'emit')).toHaveAttribute('data-state', 'completed', { timeout: 60_000 });
  await expect(box).toContainText('line 1000');
  await expect.poll(() => gap(box)).toBeLessThan(8);
  expect(await lineCount(box)).toBeGreaterThanOrEqual(900);
  expect(await dev.evaluate(() => window.getSelection()!.toString())).toBe('line 3');
  await expect(dev.getByTestId('step-artifact')).toHaveAttribute('href', /\/api\/v1\/artifacts\//);

  // The raw event log is collapsed and leaves log lines out unless asked.
  const rows = dev.getByTestId('event-row');
  await expect(rows.first()).toBeHidden();
  await dev.getByTestId('events-open').click();
  await expect(dev.locator('[data-testid="event-row"][data-type="step.started"]')).toBeVisible();
  await expect(dev.locator('[data-testid="event-row"][data-type="step.log"]').first()).toBeHidden();
  await dev.getByTestId('events-logs').check();
  await expect(dev.locator('[data-testid="event-row"][data-type="step.log"]').first()).toBeVisible();
  await dev.getByTestId('events-type').selectOption('task.completed');
  await expect(dev.locator('[data-testid="event-row"][data-type="task.completed"]')).toBeVisible();
  await expect(dev.locator('[data-testid="event-row"][data-type="step.log"]').first()).toBeHidden();
  expect(await dev.evaluate(() => document.documentElement.scrollHeight)).toBeLessThan(6000);
});

test('a dropped socket resumes the log where the page is: no line lost, none twice', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local');
  // The run page's socket goes through the test, which drops it and holds
  // the reconnect back while more lines are logged.
  const sockets: WebSocketRoute[] = [];
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  await dev.routeWebSocket(/\/tasks\/[0-9a-f-]{36}\/ws/, async (ws) => {
    sockets.push(ws);
    if (sockets.length > 1) await released;
    ws.connectToServer();
  });
  await submit(dev, 'long-log');
  const id = dev.url().split('/').pop()!;
  const box = dev.locator('#step-1-log');
  await expect.poll(() => lineCount(box)).toBeGreaterThanOrEqual(50);
  expect(sockets[0].url()).toMatch(/\?after_seq=\d+&/);

  await sockets[0].close({ code: 1012, reason: 'dropped by the test' });
  await expect.poll(() => sockets.length).toBe(2);
  const seq = Number(await dev.locator('#run-seq').getAttribute('data-seq'));
  expect(sockets[1].url()).toContain(`after_seq=${seq}&`); // where the page is
  await expect.poll(async () => {
    const res = await dev.request.get(`/api/v1/tasks/${id}/events?after_seq=${seq}`);
    return (await res.json()).events.length;
  }).toBeGreaterThanOrEqual(30);
  release();

  await expect(head(dev, 'emit')).toHaveAttribute('data-state', 'completed', { timeout: 60_000 });
  await expect(box).toContainText('line 1000');
  const lines = await box.evaluate((el: HTMLElement) => Array.from(el.children, (c) => c.textContent!.trim()));
  expect(lines).toEqual(Array.from({ length: 1000 }, (_, i) => `line ${i + 1}`));
  await dev.screenshot({ path: '/tmp/streams-run-resumed.png' });
});

test('skipped and waiting states', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local');

  // A step held by an approval waits for approval.
  await submit(dev, 'approval-demo');
  await expect(head(dev, 'release')).toHaveAttribute('data-display', 'waiting_for_approval');
  await expect(head(dev, 'release').getByTestId('step-status')).toHaveText('waiting for approval');
  await expect(head(dev, 'prepare')).toHaveAttribute('data-state', 'completed');

  // A step between attempts says when which attempt comes; the steps after
  // a failure were skipped; the failing step's output is shown.
  await submit(dev, 'flaky-then-skip');
  const flaky = head(dev, 'flaky');
  await expect(flaky).toHaveAttribute('data-display', 'retrying');
  await expect(flaky.getByTestId('step-status')).toHaveText(/^retrying in \d+ s \(attempt [234] of 4\)$/);
  await expect(head(dev, 'after')).toHaveAttribute('data-state', 'pending');
  await dev.screenshot({ path: 'test-results/run-retrying.png', fullPage: true });
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'failed', { timeout: 30_000 });
  await expect(flaky).toHaveAttribute('data-state', 'failed');
  await expect(flaky.getByTestId('step-attempts')).toHaveText('attempt 4 of 4');
  // The duration spans every attempt (backoffs of about 1, 2 and 4 s).
  const took = await flaky.getByTestId('clock').textContent();
  expect(took).toMatch(/^\d+(\.\d)? s$/);
  expect(parseFloat(took!)).toBeGreaterThanOrEqual(5);
  await expect(head(dev, 'after')).toHaveAttribute('data-state', 'skipped');
  await expect(head(dev, 'after').getByTestId('step-status')).toHaveText('skipped');
  await expect(dev.getByTestId('failure-log')).toContainText('attempt 4: connection refused');
  await expect(dev.locator('[data-testid="compensation-row"][data-step="prepare"]')).toHaveAttribute('data-state', 'compensated');
  await dev.screenshot({ path: 'test-results/run-skipped.png', fullPage: true });
});

test('the run page of a deploy: header, nested groups, compensation lane, failure output, timeline', async ({ browser }) => {
  test.setTimeout(120_000);
  const app = `run${Date.now().toString(36).slice(-5)}`;
  for (const width of [1400, 390]) {
    const page = await signIn(browser, 'dev@demo.local', { width, height: 900 });
    const state = page.locator('#task-state [data-testid="state-badge"]');
    const noSideScroll = async () => expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);

    // Completed: the first deploy of this app.
    await submit(page, 'showcase', { app: `${app}${width}`, version: '1.0.0', regions: 'eu-west-1,us-east-1,ap-south-1' });
    await expect(state).toHaveAttribute('data-state', 'completed');
    await expect(page.getByTestId('deploy-version')).toHaveText('1.0.0');
    await expect(page.getByTestId('deploy-summary')).toContainText('first deploy');
    await expect(page.getByTestId('step-group')).toHaveCount(2);
    await expect(page.getByTestId('group-join').nth(0)).toHaveText('join all');
    await expect(page.getByTestId('group-join').nth(1)).toHaveText('join all, 2 at once');
    await expect(page.getByTestId('step-group').nth(1).getByTestId('step-row')).toHaveCount(3);
    await expect(page.getByTestId('gantt-row')).toHaveCount(8);
    await noSideScroll();
    await page.screenshot({ path: `test-results/run-completed-${width}.png`, fullPage: true });

    // Running: 2.0.0 replaces 1.0.0, its regions take a while.
    await submit(page, 'showcase', { app: `${app}${width}`, version: '2.0.0', regions: 'eu-west-1,us-east-1,ap-south-1', pause: '3' });
    await expect(page.locator('[data-testid="step-row"][data-step="rollout[eu-west-1]"]')).toHaveAttribute('data-state', 'running');
    await expect(page.getByTestId('deploy-from')).toHaveText('1.0.0');
    await expect(page.getByTestId('deploy-version')).toHaveText('2.0.0');
    await expect(page.getByTestId('clock').first()).not.toBeEmpty();
    await noSideScroll();
    await page.screenshot({ path: `test-results/run-running-${width}.png`, fullPage: true });
    await expect(state).toHaveAttribute('data-state', 'completed', { timeout: 30_000 });

    // Failed and compensated: 3.0.0's check fails, everything is undone.
    await submit(page, 'showcase', { app: `${app}${width}`, version: '3.0.0', regions: 'eu-west-1,us-east-1,ap-south-1', fail: true });
    await expect(state).toHaveAttribute('data-state', 'failed');
    await expect(page.getByTestId('deploy-from')).toHaveText('2.0.0');
    await expect(page.getByTestId('failure-log')).toContainText('health check failed: 503');
    await expect(page.getByTestId('failure-log')).not.toContainText('rolling');
    await expect(head(page, 'announce')).toHaveAttribute('data-state', 'skipped');
    const lane = page.getByTestId('compensation-row');
    await expect(lane).toHaveCount(5);
    await expect(lane.first()).toHaveAttribute('data-state', 'compensated');
    await expect(lane.last()).toHaveAttribute('data-step', 'build');
    await expect(page.locator('#comp-1-log')).toContainText('removing the build');
    await expect(page.locator('[data-testid="gantt-row"][data-lane="comp"]')).toHaveCount(5);
    await noSideScroll();
    await page.screenshot({ path: `test-results/run-failed-${width}.png`, fullPage: true });
    await page.context().close();
  }
});
