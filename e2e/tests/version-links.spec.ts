import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';

// A pipeline's links (linked-service): the run page links the version to
// its release and, on a second deploy, the change from the one it replaces.
// Its own app name, so other specs' deploys never count.
const app = `linked${Date.now().toString(36).slice(-5)}`;

async function deploy(page: Page, version: string) {
  await page.goto('/tasks/new?pipeline=linked-service');
  await page.getByTestId('field-app').fill(app);
  await page.getByTestId('field-version').fill(version);
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expect(page.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
}

test('versions link to their release and the change to its comparison', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local', { width: 1400, height: 900 });
  await deploy(dev, '1.0.0');
  const summary = dev.getByTestId('deploy-summary');
  await expect(summary.getByTestId('version-link')).toHaveAttribute('href', `http://127.0.0.1:3000/${app}/releases/tag/v1.0.0`);
  await expect(summary.getByTestId('compare-link')).toHaveCount(0);

  await deploy(dev, '1.1.0');
  await expect(summary.getByTestId('version-link')).toHaveAttribute('href', `http://127.0.0.1:3000/${app}/releases/tag/v1.1.0`);
  await expect(summary.getByTestId('compare-link')).toHaveAttribute('href', `http://127.0.0.1:3000/${app}/compare/v1.0.0...v1.1.0`);
  await expect(summary.getByTestId('version-link')).toHaveAttribute('rel', /noopener/);
  await dev.screenshot({ path: '/tmp/demo-links-1400.png', fullPage: false });
  await dev.setViewportSize({ width: 390, height: 844 });
  await dev.screenshot({ path: '/tmp/demo-links-390.png', fullPage: false });
});
