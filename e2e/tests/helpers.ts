import { expect, Browser, Page } from '@playwright/test';

// The demo users' password (serve.sh sets FLIGHTDECK_DEV_PASSWORD).
export const password = process.env.FLIGHTDECK_DEV_PASSWORD ?? 'e2e-demo-password';

// signIn logs a demo user in, in a browser context of its own (so two
// people can act side by side; at a viewport size when given), and returns
// the task list page.
export async function signIn(browser: Browser, email: string, viewport?: { width: number; height: number }): Promise<Page> {
  const page = await (await browser.newContext(viewport ? { viewport } : {})).newPage();
  await page.goto('/login');
  await page.getByTestId('login-email').fill(email);
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();
  await expect(page).toHaveURL(/\/tasks$/);
  return page;
}
