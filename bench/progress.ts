// A progress bar on stderr for the bulk preloads. On a terminal it redraws in
// place; into a file or pipe it writes a line every 10 % instead.

export interface Progress {
  update(done: number): void;
  finish(): void;
}

export function progressBar(label: string, total: number): Progress {
  const tty = process.stderr.isTTY;
  const started = performance.now();
  let lastDecile = -1;
  const render = (done: number) => {
    const frac = total === 0 ? 1 : done / total;
    const width = 30;
    const filled = Math.round(frac * width);
    const secs = ((performance.now() - started) / 1000).toFixed(1);
    return `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${(frac * 100).toFixed(0).padStart(3)}% ${done.toLocaleString('en-US')}/${total.toLocaleString('en-US')} rows ${secs}s`;
  };
  return {
    update(done) {
      if (tty) {
        process.stderr.write(`\r${render(done)}`);
        return;
      }
      const decile = Math.floor((done / Math.max(total, 1)) * 10);
      if (decile !== lastDecile) {
        lastDecile = decile;
        process.stderr.write(`${render(done)}\n`);
      }
    },
    finish() {
      if (tty) process.stderr.write(`\r${render(total)}\n`);
      else if (lastDecile !== 10) process.stderr.write(`${render(total)}\n`);
    },
  };
}
