import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// guarded-service (e2e/pipelines) deploys into e2e-staging, which promotes
// to e2e-prod, where two reviewers decide (e2e/pipelines/environments.yaml).
// A fresh app per run keeps runs apart.
const app = `prot${Date.now().toString(36).slice(-5)}`;

async function deploy(page: Page, appName: string, version: string, stage: string) {
  await page.goto('/tasks/new?pipeline=guarded-service');
  await page.getByTestId('field-app').fill(appName);
  await page.getByTestId('field-version').fill(version);
  await page.getByTestId('field-stage').selectOption(stage);
  await page.getByTestId('submit-task').click();
}

const state = (page: Page) => page.locator('#task-state [data-testid="state-badge"]');
const row = (page: Page, appName: string, stage: string) =>
  page.locator(`[data-testid="environment"][data-target="app=${appName} stage=${stage}"]`);

test('a promotion to an environment with two reviewers', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 900 });
  await deploy(dev, app, '1.4.0', 'e2e-staging');
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expect(state(dev)).toHaveAttribute('data-state', 'completed');

  // The environments page offers the promotion with what it changes.
  await dev.goto('/environments?pipeline=guarded-service');
  const staging = row(dev, app, 'e2e-staging');
  await staging.getByTestId('env-promote').locator('summary').click();
  const form = staging.getByTestId('env-promote-form');
  await expect(form.locator('[data-testid="change"][data-field="stage"]')).toHaveAttribute('data-changed', 'true');
  await expect(form.locator('[data-testid="change"][data-field="version"]')).toContainText('1.4.0');
  await dev.screenshot({ path: '/tmp/protect-promote-1400.png', fullPage: true });
  await form.getByTestId('env-promote-confirm').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const promoted = dev.url();
  await expect(state(dev)).toHaveAttribute('data-state', 'awaiting_approval');
  await expect(dev.getByTestId('task-promoted')).toBeVisible();
  await expect(dev.getByTestId('approval-count')).toHaveText('(0 of 2)');
  await expect(dev.getByTestId('approval-why-not')).toContainText('four eyes');
  // Every decision it needs is listed from the start, with who may make it:
  // the release step's own approval is the reviewers' to decide (decide once).
  const decisions = dev.getByTestId('decisions');
  await expect(decisions.getByTestId('decision')).toHaveCount(2);
  await expect(decisions).toContainText('2 reviewers of e2e-prod approve the deploy');
  await expect(decisions).toContainText('not dev@demo.local (four eyes)');
  await expect(decisions).toContainText('the approval of step release');
  await expect(decisions).toContainText("decided by the reviewers' approval");
  await dev.screenshot({ path: '/tmp/decisions-1400.png', fullPage: true });
  await dev.setViewportSize({ width: 390, height: 844 });
  await dev.screenshot({ path: '/tmp/decisions-390.png', fullPage: true });
  await dev.setViewportSize({ width: 1400, height: 900 });

  // The first reviewer approves from the inbox, with the diff in view.
  const approver = await signIn(browser, 'approver@demo.local', { width: 1400, height: 900 });
  await approver.goto('/approvals');
  const item = approver.locator('[data-testid="inbox-item"]', { hasText: app });
  await expect(item.getByTestId('inbox-reviewers')).toContainText('0 of 2');
  await expect(item.locator('[data-testid="change"][data-field="stage"]')).toContainText('e2e-prod');
  await approver.screenshot({ path: '/tmp/protect-inbox-1400.png', fullPage: true });
  await approver.setViewportSize({ width: 390, height: 844 });
  await approver.screenshot({ path: '/tmp/protect-inbox-390.png', fullPage: true });
  await approver.setViewportSize({ width: 1400, height: 900 });
  await approver.goto(promoted);
  await approver.getByTestId('approval-comment').fill('staging looked fine');
  await approver.getByTestId('approve').click();
  await approver.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(approver.getByTestId('approval-count')).toHaveText('(1 of 2)');
  await expect(approver.getByTestId('approval-why-not')).toContainText('decided already');
  await expect(state(approver)).toHaveAttribute('data-state', 'awaiting_approval');

  // The second (an admin) approves on the run page: the deploy runs.
  const admin = await signIn(browser, 'admin@demo.local', { width: 390, height: 844 });
  await admin.goto(promoted);
  await expect(admin.getByTestId('approval-decisions')).toContainText('approver@demo.local approved: staging looked fine');
  await admin.screenshot({ path: '/tmp/protect-run-390.png', fullPage: true });
  await admin.getByTestId('approve').click();
  await admin.getByTestId('confirm-ok').click();
  await expect(state(admin)).toHaveAttribute('data-state', 'completed');
  await expect(state(dev)).toHaveAttribute('data-state', 'completed');
  // the release step's approval was recorded as the reviewers', no second round
  await dev.reload();
  await expect(dev.locator('[data-testid="approval"][data-state="approved"]', { hasText: 'release' })).toBeVisible();
  await dev.screenshot({ path: '/tmp/protect-run-1400.png', fullPage: true });
});

test('a freeze refuses a deploy until an admin overrides it', async ({ browser }) => {
  test.setTimeout(120_000);
  const admin = await signIn(browser, 'admin@demo.local', { width: 1400, height: 900 });
  const dev = await signIn(browser, 'dev@demo.local', { width: 390, height: 844 });
  await deploy(dev, app, '2.0.0', 'e2e-frozen');
  await expect(state(dev)).toHaveAttribute('data-state', 'completed');

  // An admin freezes e2e-prod from the environments page.
  await admin.goto('/environments?pipeline=guarded-service');
  await admin.getByTestId('freeze-new').locator('summary').click();
  await admin.getByTestId('freeze-environment').fill('e2e-prod');
  await admin.getByTestId('freeze-minutes').fill('30');
  await admin.getByTestId('freeze-reason').fill('incident 4711');
  await admin.getByTestId('freeze-submit').click();
  await expect(admin).toHaveURL(/\/environments$/);
  const freeze = admin.locator('[data-testid="freeze"][data-environment="e2e-prod"][data-source="api"]');
  await expect(freeze.getByTestId('freeze-active')).toBeVisible();

  // The deployer's promotion is refused: frozen, with the reason.
  await dev.goto('/environments?pipeline=guarded-service');
  const frozenRow = row(dev, app, 'e2e-frozen');
  await frozenRow.getByTestId('env-promote').locator('summary').click();
  await expect(frozenRow.getByTestId('promote-override')).toHaveCount(0);
  await frozenRow.getByTestId('env-promote-confirm').click();
  await expect(dev.getByTestId('env-flash')).toContainText('frozen (incident 4711)');
  await dev.screenshot({ path: '/tmp/protect-frozen-390.png', fullPage: true });

  // The admin breaks the glass with a reason: accepted, shown and audited.
  await admin.goto('/environments?pipeline=guarded-service');
  await admin.screenshot({ path: '/tmp/protect-environments-1400.png', fullPage: true });
  const adminRow = row(admin, app, 'e2e-frozen');
  await adminRow.getByTestId('env-promote').locator('summary').click();
  await adminRow.getByTestId('promote-override').fill('hotfix for incident 4711');
  await adminRow.getByTestId('env-promote-confirm').click();
  await expect(admin).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expect(admin.getByTestId('task-override')).toContainText('hotfix for incident 4711');
  await expect(state(admin)).toHaveAttribute('data-state', 'awaiting_approval');
  // Cancel works while it waits for its reviewers: nothing ran.
  await admin.getByTestId('cancel-open').click();
  await admin.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(state(admin)).toHaveAttribute('data-state', 'cancelled');

  await admin.goto('/audit?type=task.override');
  // Found by its reason, not by being the newest entry.
  await expect(admin.locator('[data-testid="audit-entry"]').filter({ hasText: 'hotfix for incident 4711' })).toHaveCount(1);
  await admin.screenshot({ path: '/tmp/protect-audit-1400.png', fullPage: true });
  await admin.setViewportSize({ width: 390, height: 844 });
  await admin.screenshot({ path: '/tmp/protect-audit-390.png', fullPage: true });
  await admin.setViewportSize({ width: 1400, height: 900 });
  const download = admin.waitForEvent('download');
  await admin.getByTestId('audit-csv').click();
  const csv = await (await download).path();
  const fs = await import('fs');
  const text = fs.readFileSync(csv!, 'utf8');
  expect(text.split('\n')[0]).toBe('id,at,actor,type,task_id,detail');
  expect(text).toContain('task.override');

  // Ending the freeze lets the deployer through.
  await admin.goto('/environments?pipeline=guarded-service');
  await admin.locator('[data-testid="freeze"][data-environment="e2e-prod"][data-source="api"]').getByTestId('freeze-end').click();
  await expect(admin.locator('[data-testid="freeze"][data-environment="e2e-prod"][data-source="api"]')).toHaveCount(0);
});

test('the submit form says the rules, schedules a deploy and takes an admin override', async ({ browser }) => {
  test.setTimeout(120_000);
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 900 });
  await dev.goto('/tasks/new?pipeline=guarded-service');
  await expect(dev.getByTestId('form-rules')).toContainText('e2e-prod: 2 reviewers (approver or admin) approve first');
  await expect(dev.getByTestId('field-override')).toHaveCount(0);
  await dev.screenshot({ path: '/tmp/protect-form-1400.png', fullPage: true });

  // A deploy scheduled for tomorrow waits, holding no worker, and can be cancelled.
  const tomorrow = new Date(Date.now() + 24 * 3600 * 1000).toISOString().slice(0, 16);
  await dev.getByTestId('field-app').fill(app);
  await dev.getByTestId('field-version').fill('3.0.0');
  await dev.getByTestId('field-run-at').fill(tomorrow);
  await dev.getByTestId('submit-task').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expect(state(dev)).toHaveAttribute('data-state', 'scheduled');
  await expect(dev.getByTestId('task-run-at')).toContainText('Scheduled: runs at');
  await dev.getByTestId('cancel-open').click();
  await dev.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(state(dev)).toHaveAttribute('data-state', 'cancelled');

  // A bad version for e2e-prod is refused on the form.
  await deploy(dev, app, 'latest', 'e2e-prod');
  await expect(dev.getByTestId('form-error')).toContainText('e2e-prod takes a version like 1.2.3');

  // The admin sees the override field.
  const admin = await signIn(browser, 'admin@demo.local', { width: 390, height: 844 });
  await admin.goto('/tasks/new?pipeline=guarded-service');
  await expect(admin.getByTestId('field-override')).toBeVisible();
  await admin.screenshot({ path: '/tmp/protect-form-390.png', fullPage: true });
});
