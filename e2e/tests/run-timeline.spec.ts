import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// The run page at GitHub Actions' level: a timeline that ticks while a
// step prints nothing, log lines with numbers, links, times, search and
// colours, the raw log in the browser, undo in its own colour, the
// approval card's context, and confirmations of what cannot be undone.

async function submit(page: Page, fields: Record<string, string | boolean>): Promise<string> {
  await page.goto('/tasks/new?pipeline=quiet-undo');
  for (const [name, value] of Object.entries(fields)) {
    const field = page.getByTestId(`field-${name}`);
    if (typeof value === 'boolean') await field.setChecked(value);
    else if (name === 'env') await field.selectOption(value);
    else await field.fill(value);
  }
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  return page.url();
}

const app = () => `tl${Date.now().toString(36).slice(-6)}`;
const head = (page: Page, step: string) => page.locator(`[data-testid="step-row"][data-step="${step}"]`);
const barEnd = (page: Page, step: string) => page.locator(`[data-testid="gantt-row"][data-step="${step}"] .gantt-bar`)
  .evaluate((el: HTMLElement) => parseFloat(el.style.left) + parseFloat(el.style.width));

test('the timeline ticks while a step prints nothing, with an axis and a legend', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const frames: number[] = [];
  dev.on('websocket', ws => ws.on('framereceived', () => frames.push(Date.now())));
  await submit(dev, { app: app(), version: '1.0.0', quiet: '12' });
  await expect(head(dev, 'wait_quietly')).toHaveAttribute('data-state', 'running');
  await expect(dev.getByTestId('progress-text')).toContainText('of 3 steps');

  // The run's clock goes on with no message from the server: the span
  // grows, the axis gets new marks, the quiet step's bar reaches the
  // moving end.
  await expect(head(dev, 'prepare')).toHaveAttribute('data-state', 'completed');
  const quietSince = Date.now();
  const lastTick = () => dev.getByTestId('gantt-axis').locator('.gantt-tick').last().textContent();
  const span = () => dev.getByTestId('gantt-span').textContent();
  const tick0 = await lastTick(), span0 = await span();
  await expect.poll(lastTick, { timeout: 8_000 }).not.toBe(tick0);
  await expect.poll(span, { timeout: 8_000 }).not.toBe(span0);
  // Reaches the moving end: left + width is the whole span. (Its width
  // alone depends on how long the step before it took, which a loaded
  // machine stretches: 73 % once, against a bound of 90.)
  expect(await barEnd(dev, 'wait_quietly')).toBeGreaterThan(99);
  expect(frames.filter(t => t > quietSince), 'no server message moved it').toHaveLength(0);
  await expect(dev.locator('[data-testid="gantt-row"][data-step="wait_quietly"] .gantt-bar')).toHaveClass(/bar-running/);
  await expect(dev.getByTestId('gantt-axis').locator('.gantt-tick').first()).toHaveText('0');
  expect(await dev.getByTestId('gantt-axis').locator('.gantt-tick').count()).toBeGreaterThanOrEqual(2);
  await expect(dev.getByTestId('gantt-legend')).toContainText('running');
  await expect(dev.getByTestId('gantt-legend')).toContainText('completed');
  const clock = head(dev, 'wait_quietly').getByTestId('clock');
  const before = await clock.textContent();
  await expect.poll(() => clock.textContent()).not.toBe(before);
});

test('log lines: numbers, a link that opens the line, timestamps, search, colours, the raw log', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const url = await submit(dev, { app: app(), version: '1.2.0', quiet: '0' });
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
  await head(dev, 'prepare').click();
  const box = dev.locator('[data-testid="step-log"][data-step="prepare"]');
  await expect(box).toBeVisible();

  // Numbers and colours.
  const line3 = dev.locator('#step-prepare-L3');
  await expect(line3.locator('.ln-n')).toHaveAttribute('data-n', '3');
  await expect(line3.locator('.ansi-fg-2.ansi-bold')).toHaveText('warning');
  await expect(dev.locator('#step-prepare-L1 .ansi-fg-3')).toHaveText('ready');
  expect(await line3.evaluate((el: HTMLElement) => getComputedStyle(el.querySelector('.ansi-fg-2')!).color)).toBe('rgb(255, 123, 114)');

  // Timestamps: off, then on (and remembered on the next visit).
  await expect(line3.locator('.ln-t')).toBeHidden();
  await dev.getByTestId('log-times').check();
  await expect(line3.locator('.ln-t')).toBeVisible();
  expect(await line3.locator('.ln-t').evaluate((el: HTMLElement) => getComputedStyle(el, '::before').content)).toMatch(/^"\d\d:\d\d:\d\d\.\d\d\d"$/);

  // Search within the step's log.
  await box.locator('xpath=..').getByTestId('log-search').fill('BUNDLE');
  await expect(box.locator('xpath=..').getByTestId('log-count')).toHaveText('1 of 4 lines');
  await expect(dev.locator('#step-prepare-L2')).toBeVisible();
  await expect(line3).toBeHidden();
  await box.locator('xpath=..').getByTestId('log-search').fill('');
  await expect(line3).toBeVisible();

  // A link to line 3 opens the step at that line, on a page loaded fresh.
  await line3.locator('.ln-n').click();
  await expect(dev).toHaveURL(/#step-prepare-L3$/);
  const other = await (await browser.newContext()).newPage();
  await other.goto('/login');
  await other.getByTestId('login-email').fill('dev@demo.local');
  await other.getByTestId('login-password').fill(process.env.FLIGHTDECK_DEV_PASSWORD ?? 'e2e-demo-password');
  await other.getByTestId('login-submit').click();
  await expect(other).toHaveURL(/\/tasks$/);
  await other.goto(url + '#step-prepare-L3');
  const target = other.locator('#step-prepare-L3');
  await expect(target).toBeVisible(); // its step opened by itself
  await expect(target).toHaveClass(/ln-target/);
  await expect(target).toBeInViewport();
  await other.screenshot({ path: 'test-results/run-log-line-link.png' });

  // View raw: the whole log as plain text in the browser; download kept.
  const raw = dev.locator('[data-step="prepare"]').locator('xpath=ancestor::li[1]').getByTestId('step-raw');
  const href = (await raw.getAttribute('href'))!;
  expect(href).toMatch(/\/api\/v1\/artifacts\/[0-9a-f-]+\?view=raw$/);
  const res = await dev.request.get(href);
  expect(res.headers()['content-type']).toBe('text/plain; charset=utf-8');
  expect(res.headers()['content-disposition']).toMatch(/^inline;/);
  await other.goto(href); // shown, not downloaded (a download would fail the navigation)
  await expect(other.locator('body')).toContainText('fetching the bundle');
  const dl = dev.locator('[data-step="prepare"]').locator('xpath=ancestor::li[1]').getByTestId('step-artifact');
  await expect(dl).toHaveAttribute('download', '');
});

test('a failure undone: "undone" in its own colour, the error once, undo bars apart', async ({ browser }) => {
  for (const width of [1400, 390]) {
    const dev = await signIn(browser, 'dev@demo.local', { width, height: 900 });
    await submit(dev, { app: app(), version: '2.0.0', quiet: '1', fail: true });
    await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'failed');
    const undo = dev.locator('[data-testid="compensation-row"][data-step="prepare"]');
    await expect(undo).toHaveAttribute('data-state', 'compensated');
    await expect(undo.getByTestId('step-status')).toHaveText('undone');
    const undone = await undo.getByTestId('step-status').evaluate((el: HTMLElement) => getComputedStyle(el).color);
    await expect(head(dev, 'prepare').getByTestId('step-status')).toHaveText('undone');
    await expect(dev.locator('#task-state')).toBeVisible();
    const green = await dev.evaluate(() => {
      const probe = document.createElement('span');
      probe.className = 'badge badge-completed';
      document.body.appendChild(probe);
      const color = getComputedStyle(probe).color;
      probe.remove();
      return color;
    });
    expect(undone).not.toBe(green);

    // The error once: in the header, not again on the step or the failure card.
    await expect(dev.getByTestId('task-error')).toContainText('exit status 3');
    await expect(dev.getByTestId('failure-error')).toHaveCount(0);
    await expect(head(dev, 'finish').locator('.step-error')).toHaveCount(0);
    await expect(dev.getByTestId('failure-log')).toContainText('the release check failed');

    // Undo bars in their own colour, a forward bar that was undone, a legend that says so.
    await expect(dev.locator('[data-testid="gantt-row"][data-lane="comp"] .gantt-bar')).toHaveClass(/bar-undo/);
    await expect(dev.locator('[data-testid="gantt-row"][data-lane="step"][data-step="prepare"]')).toHaveAttribute('data-key', 'undone');
    await expect(dev.getByTestId('gantt-legend')).toContainText('completed, then undone');
    await expect(dev.getByTestId('gantt-legend')).toContainText('undo');
    expect(await dev.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(width);
    await dev.screenshot({ path: `test-results/run-undone-${width}.png`, fullPage: true });
    await dev.context().close();
  }
});

test('approvals: the card says what changes and who decides, the badge follows live, decisions ask first', async ({ browser }) => {
  const name = app();
  const approver = await signIn(browser, 'approver@demo.local');
  const badge = approver.getByTestId('nav-approvals-count');
  const count = async () => (await badge.count()) ? Number(await badge.textContent()) : 0;
  const was = await count();

  // 1.0.0 first in production (approved), then 1.1.0 waits: 1.0.0 → 1.1.0.
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 900 });
  for (const version of ['1.0.0', '1.1.0']) {
    const url = await submit(dev, { app: name, version, env: 'production', quiet: '0' });
    await expect(dev.getByTestId('approval')).toHaveAttribute('data-state', 'pending');
    // The approver's open task list counts it without a reload.
    await expect.poll(count).toBe(was + 1);
    if (version === '1.0.0') {
      await approver.goto(url);
      await approver.getByTestId('approve').click();
      await expect(approver.getByTestId('confirm-dialog')).toBeVisible();
      await expect(approver.getByTestId('confirm-dialog')).toContainText('1.0.0 (first deploy of this target)');
      await approver.getByTestId('confirm-ok').click();
      await expect(approver.getByTestId('flash')).toContainText('Approved.');
      await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
      await expect.poll(count).toBe(was); // the run page's badge follows the decision
      await approver.goto('/tasks');
    }
  }
  const card = dev.getByTestId('approval');
  await expect(card.getByTestId('approval-change')).toContainText('1.0.0 → 1.1.0');
  await expect(card.getByTestId('approval-deciders')).toHaveText('any approver or admin, except dev@demo.local (who asked)');
  await expect(dev.getByTestId('gantt-band')).toHaveCount(1);
  await expect(dev.getByTestId('gantt-legend')).toContainText('waiting for approval');
  await dev.screenshot({ path: 'test-results/run-awaiting-approval-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 900 });
  expect(await dev.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  await dev.screenshot({ path: 'test-results/run-awaiting-approval-390.png', fullPage: true });

  // In the inbox: reject asks first; going back changes nothing.
  await approver.goto('/approvals');
  const item = approver.locator(`[data-testid="inbox-item"]`).filter({ hasText: name });
  await expect(item.getByLabel('Comment')).toBeVisible();
  await item.getByTestId('inbox-reject').click();
  const dialog = approver.getByTestId('confirm-dialog');
  await expect(dialog).toContainText(`Reject wait_quietly?`);
  await expect(dialog).toContainText('1.0.0 → 1.1.0');
  await approver.screenshot({ path: 'test-results/confirm-reject-1400.png' });
  await approver.getByTestId('confirm-cancel').click();
  await expect(dialog).toBeHidden();
  await expect(card).toHaveAttribute('data-state', 'pending');
  await item.getByTestId('inbox-reject').click();
  await approver.getByTestId('confirm-ok').click();
  await expect(approver.getByTestId('flash')).toContainText('Rejected');
  await expect(card).toHaveAttribute('data-state', 'rejected');
  await expect.poll(count).toBe(was);
});

test('cancel asks first and says what will not happen', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  const name = app();
  await submit(dev, { app: name, version: '1.0.0', quiet: '0' });
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
  await submit(dev, { app: name, version: '1.1.0', quiet: '30' });
  await expect(head(dev, 'wait_quietly')).toHaveAttribute('data-state', 'running');
  await dev.getByTestId('cancel-open').click();
  const dialog = dev.getByTestId('confirm-dialog');
  await expect(dialog).toContainText('Cancel this deploy?');
  await expect(dialog).toContainText('1.0.0 → 1.1.0 will not happen');
  await dev.keyboard.press('Escape');
  await expect(dialog).toBeHidden();
  await expect(head(dev, 'wait_quietly')).toHaveAttribute('data-state', 'running');
  await dev.getByTestId('cancel-open').click();
  await dev.getByTestId('confirm-ok').click();
  await expect(dev.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'cancelled');
});
