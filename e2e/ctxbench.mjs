import { chromium } from '@playwright/test';
import { execSync } from 'node:child_process';
const args = (process.env.ARGS || '').split(' ').filter(Boolean);
const b = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run','--disable-background-networking', '--disable-component-update', '--disable-sync', ...args] });
const cpu = () => Number(execSync(`ps -eo times=,args= | grep -E "chromium" | grep -v grep | awk '{s+=$1} END{print s}'`).toString());
const c0 = cpu(); const t0 = Date.now();
for (let i = 0; i < 30; i++) {
  const ctx = await b.newContext(); const p = await ctx.newPage();
  await p.goto(process.env.URL); await p.waitForTimeout(200);
  if (process.env.SHOT) await p.screenshot({ path: '/tmp/x.png', fullPage: true });
  await ctx.close();
}
console.log('cpu', cpu() - c0, 'wall', (Date.now() - t0) / 1000);
await b.close();
