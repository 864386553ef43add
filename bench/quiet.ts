// Other work on the machine skews every number the bench takes, so it looks
// before it starts: how busy is the machine without us?
import { TICKS_PER_SECOND, machineBusyTicks, treeCpuTicks } from './procfs.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU used by everything outside the bench over `seconds`, in % of one core. */
export async function backgroundCpu(seconds: number): Promise<number> {
  const busy0 = machineBusyTicks();
  const ours0 = treeCpuTicks(process.pid);
  await sleep(seconds * 1000);
  const others = machineBusyTicks() - busy0 - (treeCpuTicks(process.pid) - ours0);
  return Math.max(0, Math.round((others / TICKS_PER_SECOND / seconds) * 100));
}

/** Samples every 2 s until the background is under `limitPct` or `maxWaitS` have passed. */
export async function waitForQuiet(
  limitPct: number,
  maxWaitS: number,
  log: (line: string) => void,
): Promise<{ pct: number; waitedS: number }> {
  const started = performance.now();
  for (;;) {
    const pct = await backgroundCpu(2);
    const waitedS = Math.round((performance.now() - started) / 1000);
    if (pct < limitPct || waitedS >= maxWaitS) return { pct, waitedS };
    log(`other processes use ${pct} % of a core; waiting for a quieter machine (${waitedS}/${maxWaitS} s)`);
  }
}
