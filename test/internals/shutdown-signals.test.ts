// onShutdownSignals: the first SIGINT/SIGTERM drains, copies of it that
// arrive together are ignored, a later one forces.
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';
import { REPEAT_WINDOW_MS, exitCodeFor, forceHint, onShutdownSignals } from '../../src/cli/shutdown-signals.js';

function harness() {
  const signals = new EventEmitter();
  let now = 1_000_000;
  const calls: string[] = [];
  const stop = onShutdownSignals(
    signals,
    { drain: (s) => calls.push(`drain ${s}`), force: (s) => calls.push(`force ${s}`) },
    () => now,
  );
  return {
    send: (signal: 'SIGINT' | 'SIGTERM', afterMs = 0) => {
      now += afterMs;
      signals.emit(signal, signal);
    },
    calls,
    stop,
    signals,
  };
}

describe('onShutdownSignals', () => {
  it('drains on the first signal and ignores copies within the window', () => {
    const h = harness();
    h.send('SIGTERM');
    h.send('SIGTERM', 1);
    h.send('SIGINT', 5);
    h.send('SIGINT', REPEAT_WINDOW_MS - 10);
    assert.deepEqual(h.calls, ['drain SIGTERM']);
  });

  it('forces on a signal that comes the window or later after the first, once', () => {
    const h = harness();
    h.send('SIGINT');
    h.send('SIGINT', REPEAT_WINDOW_MS);
    h.send('SIGINT', 5000);
    assert.deepEqual(h.calls, ['drain SIGINT', 'force SIGINT']);
  });

  it('stops listening when told', () => {
    const h = harness();
    h.stop();
    assert.equal(h.signals.listenerCount('SIGINT') + h.signals.listenerCount('SIGTERM'), 0);
    h.send('SIGINT');
    assert.deepEqual(h.calls, []);
  });

  it('exit codes and hints follow the signal', () => {
    assert.equal(exitCodeFor('SIGINT'), 130);
    assert.equal(exitCodeFor('SIGTERM'), 143);
    assert.match(forceHint('SIGINT'), /press Ctrl-C again to force/);
    assert.match(forceHint('SIGTERM'), /SIGTERM again/);
  });
});
