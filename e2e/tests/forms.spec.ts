import { test, expect, signIn } from './helpers';

test('the submit form checks every field at once, in words', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  await dev.setViewportSize({ width: 1400, height: 1000 });
  await dev.goto('/tasks/new?pipeline=web-service');

  const app = dev.getByTestId('field-app');
  const version = dev.getByTestId('field-version');
  // The schema's constraints are on the inputs, and the browser reads
  // the pattern as the server does.
  await expect(app).toHaveAttribute('maxlength', '31');
  await expect(app).toHaveAttribute('required', '');
  await expect(version).toHaveAttribute('maxlength', '40');
  await expect(dev.getByTestId('field-replicas')).toHaveAttribute('max', '5');
  await expect(dev.getByTestId('hint-app')).toHaveText('lowercase letters, digits and dashes, starting with a letter, up to 31 characters');
  await expect(dev.getByTestId('form-approvals')).toContainText('deploy_container waits for approver or admin when env is production');
  for (const [value, mismatch] of [['shop-2', false], ['Not Valid!', true], ['1shop', true]] as const) {
    await app.fill(value);
    expect(await app.evaluate((el: HTMLInputElement) => el.validity.patternMismatch)).toBe(mismatch);
  }
  await version.fill('1.0.0');
  expect(await version.evaluate((el: HTMLInputElement) => el.validity.valid)).toBe(true);

  await app.fill('Not Valid!');
  await version.fill('1.0 beta');
  await dev.getByTestId('field-replicas').fill('9');
  await dev.getByTestId('submit-task').click();

  await expect(dev.getByTestId('form-error')).toContainText('3 values need fixing');
  await expect(dev.getByTestId('error-app')).toHaveText('app must be lowercase letters, digits and dashes, starting with a letter, up to 31 characters');
  await expect(dev.getByTestId('error-version')).toHaveText('version must be letters, digits, dots, plus and minus signs, up to 40 characters (1.2.3, 2024.06.1-rc1)');
  await expect(dev.getByTestId('error-replicas')).toHaveText('replicas must be at most 5');
  for (const name of ['app', 'version', 'replicas']) {
    const field = dev.getByTestId(`field-${name}`);
    await expect(field).toHaveAttribute('aria-invalid', 'true');
    await expect(field).toHaveAttribute('aria-describedby', new RegExp(`^err-${name}\\b`));
  }
  await expect(dev.getByTestId('field-env')).not.toHaveAttribute('aria-invalid', 'true');
  await expect(app).toBeFocused();
  await expect(dev.getByTestId('task-form')).not.toContainText('^[a-z]');
  await dev.screenshot({ path: '/tmp/lists-form-errors-1400.png', fullPage: true });

  await dev.setViewportSize({ width: 390, height: 844 });
  await dev.screenshot({ path: '/tmp/lists-form-errors-390.png', fullPage: true });

  // The summary's links lead to the fields.
  await dev.locator('.error-summary a', { hasText: 'replicas' }).click();
  await expect(dev).toHaveURL(/#f-replicas$/);
});

test('the pipelines page says which steps wait for whom', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  await dev.goto('/pipelines');
  const ws = dev.locator('#pipeline-web-service');
  await expect(ws.getByTestId('approval-note')).toHaveText(/deploy_container waits for approver or admin\s+when env is production\s+\(never the task's creator\)/);
  await expect(ws).toContainText('lowercase letters, digits and dashes');
  await expect(dev.locator('#pipeline-approval-demo').getByTestId('approval-note')).toContainText('release waits for approver or admin every time');
  await expect(dev.locator('#pipeline-noop').getByTestId('pipeline-approvals')).toHaveText('No step waits for an approval.');
  await dev.setViewportSize({ width: 1400, height: 1000 });
  await dev.screenshot({ path: 'test-results/pipelines.png', fullPage: true });
});
