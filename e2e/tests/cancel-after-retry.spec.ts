import { test, expect, signIn } from './helpers';

// A cancel sent right after a guided-failure retry wins (issue 34 item 5),
// and the run page shows it live: "cancelling" while it is carried out,
// never the paused card or the failed step's decisions again, then
// cancelled with the completed step undone (issue 38 item 1).
test('a cancel right after a retry ends the run cancelled, live', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 1000 });
  await dev.goto('/tasks/new?pipeline=slow-retry');
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = dev.url().split('/').pop();
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  await expect(state).toHaveAttribute('data-state', 'paused');
  await expect(dev.getByTestId('decision-card')).toBeVisible();

  await dev.getByTestId('retry-open').click();
  await dev.getByTestId('retry-confirm').click();
  // At once, as a script or a second tab would (the page's own Cancel
  // button is being swapped by the retry's push at this moment).
  const csrf = (await dev.locator('meta[name="csrf-token"]').getAttribute('content')) ?? '';
  const res = await dev.request.post(`/api/v1/tasks/${id}/cancel`, { headers: { 'X-CSRF-Token': csrf } });
  expect(res.status()).toBe(202);

  await expect(state).toHaveAttribute('data-state', 'cancelled', { timeout: 30_000 });
  for (const gone of ['decision-card', 'paused-card', 'cancel-requested', 'cancelling-badge']) {
    await expect(dev.getByTestId(gone)).toHaveCount(0);
  }
  await dev.screenshot({ path: 'test-results/cancel-after-retry-1400.png', fullPage: true });
  const task = await (await dev.request.get('/api/v1/tasks/' + id)).json();
  expect(task.state).toBe('cancelled');
  const steps = Object.fromEntries(task.steps.map((s: { name: string; state: string }) => [s.name, s.state]));
  expect(steps.prepare).toBe('compensated');
  expect(['cancelled', 'failed']).toContain(steps.smoke);

  // The list says so too.
  await dev.goto('/tasks');
  await expect(dev.locator(`#task-row-${id}`)).toHaveAttribute('data-state', 'cancelled');
});

// The confirm dialog outlives a redraw of the button that opened it: a
// push that redraws the run's header while the person reads the dialog
// (here a priority change from elsewhere) does not swallow the confirmed
// cancel. Before, the click went to the detached button and nothing was
// sent (seen right after a retry, whose push redraws the header).
test('a confirmed cancel survives the header being redrawn under its dialog', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 1000 });
  await dev.goto('/tasks/new?pipeline=slow-retry');
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const id = dev.url().split('/').pop();
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  await expect(state).toHaveAttribute('data-state', 'paused');

  await dev.getByTestId('cancel-open').click();
  await expect(dev.getByTestId('confirm-dialog')).toBeVisible();
  const csrf = (await dev.locator('meta[name="csrf-token"]').getAttribute('content')) ?? '';
  const res = await dev.request.patch(`/api/v1/tasks/${id}`, { headers: { 'X-CSRF-Token': csrf }, data: { priority: 'high' } });
  expect(res.status()).toBe(200);
  await expect(dev.getByTestId('priority-select')).toHaveValue('high'); // the header was redrawn
  await dev.getByTestId('confirm-ok').click();
  await expect(state).toHaveAttribute('data-state', 'cancelled');
});
