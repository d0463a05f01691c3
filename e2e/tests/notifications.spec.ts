import { createServer, IncomingMessage, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { test, expect, addUser, password, unique } from './helpers';

// Contract §12: a person's email choices on /account, and a team webhook
// that speaks chat (format slack) with a test message. The spec makes its
// own admin in its own team, so it depends on no other spec's data.

const suffix = unique();
const email = `notice-${suffix}@e2e.test`;
const team = `notice-${suffix}`;

test.beforeAll(() => addUser(email, team, 'admin'));

async function signIn(page: import('@playwright/test').Page) {
  await page.goto('/login');
  await page.getByTestId('login-email').fill(email);
  await page.getByTestId('login-password').fill(password);
  await page.getByTestId('login-submit').click();
  await expect(page).toHaveURL(/\/tasks$/);
}

test('/account turns kinds of email off and on', async ({ page }) => {
  await page.setViewportSize({ width: 1400, height: 900 });
  await signIn(page);
  await page.getByTestId('viewer-email').click();
  await expect(page).toHaveURL(/\/account$/);
  for (const k of ['approval', 'decision', 'attention', 'ended']) {
    await expect(page.getByTestId(`notify-${k}`)).toBeChecked();
  }
  await page.getByTestId('notify-decision').uncheck();
  await page.getByTestId('notify-ended').uncheck();
  await page.getByTestId('notify-save').click();
  await expect(page.getByTestId('account-saved')).toBeVisible();
  await page.reload();
  await expect(page.getByTestId('notify-decision')).not.toBeChecked();
  await expect(page.getByTestId('notify-ended')).not.toBeChecked();
  await expect(page.getByTestId('notify-approval')).toBeChecked();
  const api = await page.request.get('/api/v1/me/notifications');
  expect(await api.json()).toEqual({ email: { approval: true, decision: false, attention: true, ended: false } });
  await page.screenshot({ path: '/tmp/notice-account-1400.png', fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: '/tmp/notice-account-390.png', fullPage: true });

  await page.getByTestId('notify-ended').check();
  await page.getByTestId('notify-save').click();
  await expect(page.getByTestId('account-saved')).toBeVisible();
  await expect(page.getByTestId('notify-ended')).toBeChecked();
});

test('the webhooks page adds a chat webhook and sends it a test message', async ({ page }) => {
  // A chat server of our own on 127.0.0.1 (FLIGHTDECK_WEBHOOK_ALLOW lets the server reach it).
  const bodies: any[] = [];
  const server: Server = createServer((req: IncomingMessage, res) => {
    let raw = '';
    req.on('data', (c) => { raw += c; });
    req.on('end', () => { bodies.push(JSON.parse(raw)); res.writeHead(200); res.end('ok'); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  try {
    await page.setViewportSize({ width: 1400, height: 900 });
    await signIn(page);
    await page.goto('/webhooks');
    const url = `http://127.0.0.1:${port}/hooks/${suffix}`;
    await page.getByTestId('field-url').fill(url);
    await page.getByTestId('format-slack').check();
    await page.getByTestId('webhook-form').getByRole('checkbox', { name: 'approval.requested' }).check();
    await page.getByTestId('webhook-form').getByRole('button', { name: 'Add webhook' }).click();
    await expect(page.getByTestId('webhook-secret')).toBeVisible();
    const row = page.getByTestId('webhook-row').filter({ hasText: url });
    await expect(row.getByTestId('webhook-format')).toHaveText('chat (slack)');
    await row.getByTestId('webhook-test').click();
    await expect(page.getByTestId('webhook-notice')).toContainText('answered 200 OK');
    expect(bodies).toHaveLength(1);
    expect(bodies[0].text).toContain(`[flightdeck] Test message: this channel will be told when tasks of team ${team} need someone`);
    expect(bodies[0].blocks.map((b: any) => b.type)).toEqual(['section', 'actions']);
    await expect(page.getByTestId('mail-deliveries')).toBeVisible();
    await page.screenshot({ path: '/tmp/notice-webhooks-1400.png', fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: '/tmp/notice-webhooks-390.png', fullPage: true });
  } finally {
    server.close();
  }
});
