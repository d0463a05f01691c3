import { test, expect, addUser, password, unique } from './helpers';

// An admin of a team of its own: its task list is empty whatever other
// specs in this worker submitted before (demo's is not).
const suffix = unique();
const admin = `auth-${suffix}@e2e.test`;
test.beforeAll(() => addUser(admin, `auth-${suffix}`, 'admin'));

test('an admin signs in, sees the empty task list and signs out', async ({ page }) => {
  await page.goto('/tasks');
  await expect(page).toHaveURL(/\/login\?next=/);
  await page.getByTestId('login-email').fill(admin);
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();

  await expect(page).toHaveURL(/\/tasks$/);
  await expect(page.getByTestId('viewer-email')).toContainText(admin);
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
