import { Page } from '@playwright/test';
import { test, expect } from './helpers';

// Single sign-on through the fake identity provider (internal/oidctest,
// started by playwright.config.ts before flightdeck). Its sign-in page asks
// for an email and lets a test spoil the answer.
async function signInAtProvider(page: Page, email: string, verified = 'true') {
  await expect(page.getByRole('heading', { name: 'Fake identity provider' })).toBeVisible();
  await page.getByLabel('Email', { exact: true }).fill(email);
  await page.getByLabel('Email verified').selectOption(verified);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

test('a demo user signs in with SSO and lands where they were going', async ({ page }) => {
  await page.goto('/pipelines');
  await expect(page).toHaveURL(/\/login\?next=%2Fpipelines$/);
  // Passwords stay beside it.
  await expect(page.getByTestId('login-form')).toBeVisible();
  await expect(page.getByTestId('login-sso')).toHaveText('Sign in with SSO');
  await page.screenshot({ path: 'test-results/login-sso.png', fullPage: true });
  await page.getByTestId('login-sso').click();

  await expect(page).toHaveURL(/^http:\/\/127\.0\.0\.1:\d+\/authorize\?/);
  const authorize = new URL(page.url());
  expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
  await page.screenshot({ path: 'test-results/sso-provider.png', fullPage: true });
  await signInAtProvider(page, 'approver@demo.local');

  await expect(page).toHaveURL(/\/pipelines$/);
  await expect(page.getByTestId('viewer-email')).toContainText('approver@demo.local');
  const me = await (await page.request.get('/api/v1/me')).json();
  expect(me.teams).toEqual([{ name: 'demo', role: 'approver' }]);
});

test('an unverified email is refused with a clear page and no session', async ({ page }) => {
  await page.goto('/login');
  await page.getByTestId('login-sso').click();
  await signInAtProvider(page, 'admin@demo.local', 'false');

  await expect(page).toHaveURL(/\/login\/oidc\/callback\?/);
  await expect(page.getByTestId('error-page')).toContainText('Sign-in refused');
  await expect(page.getByTestId('error-page')).toContainText('has not verified the email address admin@demo.local');
  await page.screenshot({ path: 'test-results/sso-refused.png', fullPage: true });
  await page.getByTestId('error-back').click();
  await expect(page).toHaveURL(/\/login$/);
  await page.goto('/tasks');
  await expect(page).toHaveURL(/\/login\?next=/);
});

test('a person without an account joins the demo team as a viewer', async ({ page }) => {
  const email = `newcomer-${Date.now()}@demo.local`;
  await page.goto('/login');
  await page.getByTestId('login-sso').click();
  await signInAtProvider(page, email);

  await expect(page).toHaveURL(/\/tasks$/);
  await expect(page.getByTestId('viewer-email')).toContainText(email);
  const me = await (await page.request.get('/api/v1/me')).json();
  expect(me.teams).toEqual([{ name: 'demo', role: 'viewer' }]);
});
