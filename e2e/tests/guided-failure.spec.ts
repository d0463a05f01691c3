import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

async function submitGuided(dev: Page): Promise<string> {
  await dev.goto('/tasks/new?pipeline=guided-failure');
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  return dev.url();
}

// A smoke test fails under on_failure: ask: the run waits for a decision.
// Its creator may retry or roll back but not skip (four eyes); a second
// person, an approver, skips it with a reason, and the run goes on.
test('a failed step is skipped by a second person in the browser', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 1000 });
  const url = await submitGuided(dev);
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  await expect(state).toHaveAttribute('data-state', 'paused');
  const card = dev.getByTestId('decision-card');
  await expect(card).toHaveAttribute('data-step', 'smoke');
  await expect(card.getByTestId('decision-error')).toContainText('exit');
  await expect(card.getByTestId('decision-log')).toContainText('smoke test failed: 503 from /healthz');
  await expect(card.getByTestId('retry-open')).toBeVisible();
  await expect(card.getByTestId('rollback-open')).toBeVisible();
  await expect(card.getByTestId('skip-open')).toHaveCount(0);
  await expect(card.getByTestId('skip-why-not')).toContainText('approver or admin');
  await dev.screenshot({ path: 'test-results/guided-failure-1400.png', fullPage: true });

  const approver = await signIn(browser, 'approver@demo.local', { width: 390, height: 844 });
  await approver.goto(url);
  const theirs = approver.getByTestId('decision-card');
  await expect(theirs).toBeVisible();
  await theirs.getByTestId('skip-open').click();
  await approver.getByTestId('skip-comment').fill('known flaky health check, verified by hand');
  await approver.screenshot({ path: 'test-results/guided-failure-390.png', fullPage: true });
  await approver.getByTestId('skip-confirm').click();

  // Both pages follow the decision live.
  for (const p of [approver, dev]) {
    await expect(p.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
    await expect(p.getByTestId('decision-card')).toHaveCount(0);
    await expect(p.getByTestId('failure')).not.toContainText('Failed at');
  }
  await dev.screenshot({ path: 'test-results/guided-failure-skipped-1400.png', fullPage: true });
  const task = await (await dev.request.get('/api/v1/tasks/' + url.split('/').pop())).json();
  expect(task.steps.map((s: { name: string; state: string }) => `${s.name}:${s.state}`))
    .toEqual(['prepare:completed', 'smoke:skipped', 'finish:completed']);
  await dev.getByTestId('events-open').click();
  await expect(dev.locator('[data-testid="event-row"][data-type="task.resumed"]')).toContainText('skipped smoke');
});

// The creator retries: the step's second attempt passes. A plain resume
// does not decide a failed step; rolling back ends the run failed.
test('the creator retries one failed step and rolls another back', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 1000 });
  await submitGuided(dev);
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  await expect(state).toHaveAttribute('data-state', 'paused');
  await dev.getByTestId('retry-open').click();
  await dev.getByTestId('retry-confirm').click();
  await expect(state).toHaveAttribute('data-state', 'completed');

  const id = (await submitGuided(dev)).split('/').pop();
  await expect(state).toHaveAttribute('data-state', 'paused');
  const res = await dev.request.post(`/api/v1/tasks/${id}/resume`, {
    headers: { 'X-CSRF-Token': await csrf(dev) },
    data: { action: 'continue' },
  });
  expect(res.status()).toBe(409);
  await dev.getByTestId('rollback-open').click();
  await dev.getByTestId('rollback-confirm').click();
  await expect(state).toHaveAttribute('data-state', 'failed');
  await expect(dev.getByTestId('task-error')).toContainText('rolled back by dev@demo.local');
});

// Pause reaches a running deploy, which parks once its current step ends;
// Resume goes on at the next step.
test('a running deploy is paused between its steps and resumed', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 1000 });
  await dev.goto('/tasks/new?pipeline=pausable');
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  await expect(state).toHaveAttribute('data-state', 'running');
  await dev.getByTestId('pause').click();
  await expect(dev.getByTestId('pause-requested')).toBeVisible();
  await expect(state).toHaveAttribute('data-state', 'paused');
  await expect(dev.getByTestId('paused-card')).toBeVisible();
  await dev.screenshot({ path: 'test-results/paused-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 844 });
  await dev.screenshot({ path: 'test-results/paused-390.png', fullPage: true });
  await dev.setViewportSize({ width: 1400, height: 1000 });

  // The dashboard counts paused tasks apart from the queue.
  const dash = await dev.context().newPage();
  await dash.goto('/dashboard');
  await expect(dash.getByTestId('stat-paused').locator('.stat-value')).not.toHaveText('0');
  await expect(dash.getByTestId('stat-paused')).toHaveAttribute('href', /state=paused/);
  await dash.screenshot({ path: 'test-results/dashboard-paused-1400.png', fullPage: true });
  await dash.setViewportSize({ width: 390, height: 844 });
  await dash.screenshot({ path: 'test-results/dashboard-paused-390.png', fullPage: true });
  await dash.close();
  await dev.getByTestId('resume').click();
  await expect(state).toHaveAttribute('data-state', 'completed');
  const task = await (await dev.request.get('/api/v1/tasks/' + dev.url().split('/').pop())).json();
  expect(task.steps.map((s: { state: string }) => s.state)).toEqual(['completed', 'completed']);
});

async function csrf(p: Page): Promise<string> {
  return (await p.locator('meta[name="csrf-token"]').getAttribute('content')) ?? '';
}
