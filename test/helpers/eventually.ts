// The one way a test waits for something that happens on its own time.

/**
 * Checks `cond` every `stepMs` until it holds, and returns how long that
 * took; after `ms`, fails saying what it waited for. Timed with
 * performance.now(): a test may have mocked Date.
 */
export async function eventually(
  cond: () => boolean | Promise<boolean>,
  ms: number,
  { stepMs = 50, what = 'the condition' }: { stepMs?: number; what?: string } = {},
): Promise<number> {
  const start = performance.now();
  for (;;) {
    if (await cond()) return Math.round(performance.now() - start);
    if (performance.now() - start > ms) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
