import type { FullResult, Reporter, TestCase, TestResult } from '@playwright/test/reporter';

// Prints the ten slowest tests after the run (beside the list reporter), so
// where the end-to-end suite's time goes is seen on every run.
export default class SlowestReporter implements Reporter {
  private times: { title: string; ms: number }[] = [];

  onTestEnd(test: TestCase, result: TestResult) {
    this.times.push({ title: `${test.location.file.split('/').pop()} › ${test.title}`, ms: result.duration });
  }

  onEnd(_: FullResult) {
    if (this.times.length === 0) return;
    this.times.sort((a, b) => b.ms - a.ms);
    const total = this.times.reduce((s, t) => s + t.ms, 0) / 1000;
    console.log(`\nslowest tests (seconds; ${this.times.length} tests took ${total.toFixed(1)} s in all):`);
    for (const t of this.times.slice(0, 10)) console.log(`${(t.ms / 1000).toFixed(2).padStart(8)}  ${t.title}`);
  }

  printsToStdio() { return true; }
}
