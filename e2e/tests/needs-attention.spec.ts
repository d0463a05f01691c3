import { test, expect, signIn } from './helpers';

// The live socket re-renders the task header, with the admin's buttons for
// a task in needs_attention: those forms must carry the page's CSRF token.
test('an admin retries a failed compensation, then marks the task resolved', async ({ browser }) => {
  const admin = await signIn(browser, 'admin@demo.local');
  await admin.goto('/tasks/new?pipeline=stuck-undo');
  await admin.getByTestId('submit-task').click();
  await expect(admin).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const url = admin.url();
  const state = admin.locator('#task-state [data-testid="state-badge"]');

  // The buttons arrive over the socket once the undo has failed.
  await expect(state).toHaveAttribute('data-state', 'needs_attention');
  await expect(admin.locator('[data-testid="compensation-row"][data-step="prepare"]')).toHaveAttribute('data-state', 'compensation_failed');
  // It says it stopped, not that it runs, and offers only what works now.
  await expect(admin.getByTestId('task-header')).toContainText('stopped: an admin must retry the undo or mark it resolved');
  await expect(admin.getByTestId('task-header')).not.toContainText('running for');
  await expect(admin.getByTestId('cancel-open')).toHaveCount(0);
  await expect(admin.getByTestId('priority-form')).toHaveCount(0);
  await admin.screenshot({ path: 'test-results/task-needs-attention.png', fullPage: true });
  await admin.getByTestId('resolve-retry').click();
  await expect(admin).toHaveURL(url);
  await expect(admin.getByTestId('error-page')).toHaveCount(0);

  // The retried undo fails again; this time the admin gives up on it.
  await expect(state).toHaveAttribute('data-state', 'needs_attention');
  await admin.getByTestId('resolve-resolve').click();
  await expect(admin).toHaveURL(url);
  await expect(admin.getByTestId('error-page')).toHaveCount(0);
  await expect(state).toHaveAttribute('data-state', 'failed');
  // The resolution is a note, not an error.
  await expect(admin.getByTestId('task-resolution')).toHaveText('Resolved by admin@demo.local');
  await expect(admin.getByTestId('task-error')).toHaveCount(0);
  await admin.screenshot({ path: 'test-results/task-resolved.png', fullPage: true });
});
