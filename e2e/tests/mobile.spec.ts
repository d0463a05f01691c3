import { Browser, Page } from '@playwright/test';
import { test, expect, password } from './helpers';

// A phone: 390 px wide. No page may scroll sideways, and the menu folds
// behind a button.
const phone = { width: 390, height: 844 };

async function signInPhone(browser: Browser, email: string): Promise<Page> {
  const page = await (await browser.newContext({ viewport: phone })).newPage();
  await page.goto('/login');
  await expectNoSideScroll(page, 'login');
  await page.getByTestId('login-email').fill(email);
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();
  await expect(page).toHaveURL(/\/tasks$/);
  return page;
}

async function expectNoSideScroll(page: Page, what: string) {
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(width, `${what} is ${width} px wide`).toBeLessThanOrEqual(phone.width);
}

test('every page fits 390 px without horizontal scroll; the menu folds', async ({ browser }) => {
  test.setTimeout(120_000);
  const admin = await signInPhone(browser, 'admin@demo.local');

  // Something on the pages: a deploy waiting for approval, one that failed
  // and compensated, and a webhook.
  await admin.goto('/tasks/new?pipeline=approval-demo');
  await expectNoSideScroll(admin, '/tasks/new');
  await admin.getByTestId('submit-task').click();
  await expect(admin).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expect(admin.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'awaiting_approval');
  await expectNoSideScroll(admin, 'a task waiting for approval');
  await admin.screenshot({ path: 'test-results/mobile-task-awaiting.png', fullPage: true });

  await admin.goto('/tasks/new?pipeline=stuck-undo');
  await admin.getByTestId('submit-task').click();
  await expect(admin.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'needs_attention');
  await expectNoSideScroll(admin, 'a task in needs_attention');
  await admin.screenshot({ path: 'test-results/mobile-task-needs-attention.png', fullPage: true });

  // A webhook form answered with an error that quotes a long URL.
  await admin.goto('/webhooks');
  await admin.getByTestId('field-url').fill('https://10.0.0.1/a/very/long/path/that/goes/on/and/on/and/on/flightdeck/hooks');
  await admin.getByTestId('webhook-form').getByRole('button', { name: 'Add webhook' }).click();
  await expect(admin.getByTestId('form-error')).toBeVisible();
  await expectNoSideScroll(admin, 'the webhook form with an error');

  for (const path of ['/tasks', '/tasks/new', '/agent', '/approvals', '/dashboard', '/pipelines', '/webhooks']) {
    await admin.goto(path);
    await expect(admin.getByTestId('menu-toggle')).toBeVisible();
    await expectNoSideScroll(admin, path);
  }
  // The menu: closed, the links are hidden; open, they are reachable.
  await admin.goto('/tasks');
  const toggle = admin.getByTestId('menu-toggle');
  await expect(admin.getByTestId('nav-dashboard')).toBeHidden();
  await expect(toggle).toHaveAttribute('aria-expanded', 'false');
  await admin.screenshot({ path: 'test-results/mobile-tasks-menu-closed.png', fullPage: true });
  await toggle.click();
  await expect(toggle).toHaveAttribute('aria-expanded', 'true');
  await expect(admin.getByTestId('nav-dashboard')).toBeVisible();
  await expect(admin.getByTestId('logout-button')).toBeVisible();
  await expectNoSideScroll(admin, 'the open menu');
  await admin.screenshot({ path: 'test-results/mobile-tasks-menu-open.png', fullPage: true });
  await admin.getByTestId('nav-dashboard').click();
  await expect(admin).toHaveURL(/\/dashboard$/);
  await admin.screenshot({ path: 'test-results/mobile-dashboard.png', fullPage: true });
  await toggle.click();
  await toggle.click();
  await expect(admin.getByTestId('nav-dashboard')).toBeHidden();
});

test('at 1400 px the menu is the plain top bar', async ({ browser }) => {
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 900 } })).newPage();
  await page.goto('/login');
  await page.getByTestId('login-email').fill('dev@demo.local');
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();
  await expect(page).toHaveURL(/\/tasks$/);
  await expect(page.getByTestId('menu-toggle')).toBeHidden();
  await expect(page.getByTestId('nav-dashboard')).toBeVisible();
  await expect(page.getByTestId('viewer-email')).toBeVisible();
});
