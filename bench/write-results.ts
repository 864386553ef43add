// bench/results/latest.{json,md,svg}, overwritten by every run, and the same
// three files under the run's start time, kept.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderChart } from './chart.js';
import { RESULTS_DIR } from './paths.js';
import type { BenchReport } from './results.js';

export function writeResults(report: BenchReport, markdown: string): string[] {
  mkdirSync(RESULTS_DIR, { recursive: true });
  const stamp = report.startedAt.replace(/:/g, '-').replace(/\.\d+Z$/, 'Z');
  const o = report.options as { durationS: number; connections: number; durability: string };
  const subtitle = `${report.startedAt}, ${o.durationS} s per server, ${o.connections} connections, durability ${o.durability}, ${report.pinning.enabled ? 'pinned' : 'not pinned'}`;
  const files: [string, string][] = [
    ['json', `${JSON.stringify(report, null, 2)}\n`],
    ['md', `${markdown}\n`],
    ['svg', renderChart(report.results, subtitle)],
  ];
  const written: string[] = [];
  for (const name of ['latest', stamp]) {
    for (const [ext, body] of files) {
      const path = join(RESULTS_DIR, `${name}.${ext}`);
      writeFileSync(path, body);
      written.push(path);
    }
  }
  return written;
}
