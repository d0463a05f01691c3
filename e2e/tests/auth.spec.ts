import { test, expect } from '@playwright/test';

const password = process.env.FLIGHTDECK_DEV_PASSWORD ?? 'e2e-demo-password';

test('demo admin signs in, sees the empty task list and signs out', async ({ page }) => {
  await page.goto('/tasks');
  await expect(page).toHaveURL(/\/login\?next=/);
  await page.getByTestId('login-email').fill('admin@demo.local');
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();

  await expect(page).toHaveURL(/\/tasks$/);
  await expect(page.getByTestId('viewer-email')).toContainText('admin@demo.local');
  await expect(page.getByTestId('task-list-empty')).toContainText('No tasks yet');
  await expect(page.getByTestId('nav-tasks')).toHaveAttribute('aria-current', 'page');
  await page.screenshot({ path: 'test-results/task-list-empty.png', fullPage: true });

  await page.getByTestId('logout-button').click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto('/tasks');
  await expect(page).toHaveURL(/\/login\?next=/);
});

test('a wrong password shows an error and no session', async ({ page }) => {
  await page.goto('/login');
  await page.getByTestId('login-email').fill('admin@demo.local');
  await page.getByTestId('login-password').fill('not-the-password');
  await page.getByTestId('login-submit').click();
  await expect(page.getByTestId('login-error')).toContainText('Wrong email or password');
  await page.screenshot({ path: 'test-results/login-error.png', fullPage: true });
  await page.goto('/tasks');
  await expect(page).toHaveURL(/\/login\?next=/);
});
