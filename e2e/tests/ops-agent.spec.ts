import { Page } from '@playwright/test';
import { test, expect, signIn } from './helpers';
import http from 'node:http';

// A scripted OpenAI-compatible model (the server's OPENAI_BASE_URL points
// here): it lists deploys, proposes a rollback, then reports.
const llmPort = Number(process.env.E2E_LLM_PORT ?? 18734);
let llm: http.Server;
const requests: any[] = [];

function reply(res: http.ServerResponse, message: any) {
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify({
    id: 'chatcmpl-e2e', object: 'chat.completion', created: 1, model: 'e2e',
    choices: [{ index: 0, message: { role: 'assistant', ...message }, finish_reason: message.tool_calls ? 'tool_calls' : 'stop' }],
    usage: { prompt_tokens: 5, completion_tokens: 5, total_tokens: 10 },
  }));
}

function call(id: string, name: string, args: any) {
  return { content: '', tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }] };
}

test.beforeAll(async () => {
  llm = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const r = JSON.parse(body);
      requests.push(r);
      const last = r.messages[r.messages.length - 1];
      if (last.role === 'tool' && last.tool_call_id === 'c1') {
        return reply(res, call('c2', 'rollback', { app: 'shop', env: 'staging', pipeline: 'noop-service' }));
      }
      if (last.role === 'tool' && last.tool_call_id === 'c2') {
        return reply(res, { content: 'Rolled <b>shop</b> back to 1.0.0 in staging.' });
      }
      return reply(res, call('c1', 'list_tasks', { kind: 'deploy', pipeline: 'noop-service' }));
    });
  });
  await new Promise<void>((resolve) => llm.listen(llmPort, '127.0.0.1', resolve));
});

test.afterAll(async () => {
  await new Promise((resolve) => llm.close(resolve));
});


async function deploy(page: Page, version: string) {
  await page.goto('/tasks/new?pipeline=noop-service');
  await page.getByTestId('field-app').fill('shop');
  await page.getByTestId('field-version').fill(version);
  await page.getByTestId('submit-task').click();
  await expect(page).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  await expect(page.locator('#task-state [data-testid="state-badge"]')).toHaveAttribute('data-state', 'completed');
}

test('the agent reads, proposes a rollback, and runs it once the user approves in the browser', async ({ browser }) => {
  const dev = await signIn(browser, 'dev@demo.local');
  await deploy(dev, '1.0.0');
  await deploy(dev, '1.1.0');

  await dev.goto('/agent');
  await dev.getByTestId('agent-prompt').fill('shop 1.1.0 is broken in staging; roll it back');
  await dev.getByTestId('agent-submit').click();
  await expect(dev).toHaveURL(/\/tasks\/[0-9a-f-]{36}$/);
  const state = dev.locator('#task-state [data-testid="state-badge"]');
  await expect(state).toHaveAttribute('data-state', 'awaiting_approval');
  // The exact call is shown: the tool, its arguments and the version it redeploys.
  const detail = dev.getByTestId('approval-detail');
  await expect(detail).toContainText('"tool": "rollback"');
  await expect(detail).toContainText('"version": "1.0.0"');
  await expect(detail).toContainText('"rollback_from": "1.1.0"');
  await dev.screenshot({ path: 'test-results/agent-awaiting-approval.png', fullPage: true });

  // The task's creator confirms the agent's call.
  await dev.getByTestId('approve').click();
  await dev.getByTestId('confirm-ok').click(); // the dialog asks first
  await expect(state).toHaveAttribute('data-state', 'completed');
  await expect(dev.getByTestId('agent-answer')).toContainText('Rolled <b>shop</b> back to 1.0.0 in staging.');
  await expect(dev.locator('[data-testid="agent-answer"] b')).toHaveCount(0);
  await dev.screenshot({ path: 'test-results/agent-completed.png', fullPage: true });

  // The rollback is a deploy of 1.0.0 by the same user.
  const res = await dev.request.get('/api/v1/tasks?kind=deploy&pipeline=noop-service');
  const tasks = (await res.json()).tasks;
  expect(tasks[0].params.version).toBe('1.0.0');
  expect(tasks[0].created_by).toBe('dev@demo.local');
  expect(requests.length).toBe(3);
});
