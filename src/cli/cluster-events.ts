import cluster, { type Worker } from 'node:cluster';
import type { EventSignal } from '../store/store.js';

/** The word a worker sends after writes, and the primary passes on to the other workers. */
const WORD = { plantStore: 'events' } as const;

const isWord = (message: unknown): boolean =>
  typeof message === 'object' && message !== null && (message as { plantStore?: unknown }).plantStore === 'events';

/**
 * The workers of `serve --workers N` telling each other of new events, for a
 * store with no way of its own (PostgreSQL behind a transaction pooler):
 * after a write, one small IPC message per turn of the event loop
 * goes to the primary, which passes it on to every other worker (see
 * relayEventWord), whose streams then look at once.
 */
export class ClusterEventSignal implements EventSignal {
  readonly #listeners = new Set<() => void>();
  #announcing = false;
  readonly #onMessage = (message: unknown) => {
    if (isWord(message)) for (const listener of this.#listeners) listener();
  };

  constructor() {
    process.on('message', this.#onMessage);
  }

  start(): void {
    // The primary's channel is there from the fork on.
  }

  announce(): void {
    if (this.#announcing) return;
    this.#announcing = true;
    setImmediate(() => {
      this.#announcing = false;
      // A primary gone (shutting down) hears nothing; the write is answered all the same.
      if (process.connected) process.send?.(WORD, undefined, {}, () => {});
    });
  }

  listen(listener: () => void): () => void {
    const own = () => listener();
    this.#listeners.add(own);
    return () => this.#listeners.delete(own);
  }

  close(): Promise<void> {
    process.off('message', this.#onMessage);
    return Promise.resolve();
  }
}

/** The primary's side: a worker's word goes on to every other worker at once. */
export function relayEventWords(workers: Iterable<Worker>): () => void {
  const relay = (from: Worker, message: unknown) => {
    if (!isWord(message)) return;
    for (const w of workers) if (w !== from && w.isConnected()) w.send(WORD, undefined, {}, () => {});
  };
  cluster.on('message', relay);
  return () => cluster.off('message', relay);
}
