import type { Worker } from 'node:cluster';
import type { FastifyInstance } from 'fastify';

/** How long the primary waits for a worker's answer before counting it not ready. */
export const WORKER_READY_TIMEOUT_MS = 1000;

interface Question {
  plantStore: 'ready?';
  id: number;
}
interface Answer {
  plantStore: 'ready';
  id: number;
  /** The worker's own /readyz message when it is not ready. */
  notReady?: string;
}

const isQuestion = (m: unknown): m is Question =>
  typeof m === 'object' && m !== null && (m as { plantStore?: unknown }).plantStore === 'ready?';
const isAnswer = (m: unknown): m is Answer =>
  typeof m === 'object' && m !== null && (m as { plantStore?: unknown }).plantStore === 'ready';

/**
 * A worker's side: asked by the primary, it answers with what its own
 * `/readyz` says (the store, a disk that filled, the JWT keys), so that the
 * primary's admin `/readyz` is ready only while every worker is.
 */
export function answerReadiness(app: Pick<FastifyInstance, 'inject'>): () => void {
  const onMessage = (message: unknown) => {
    if (!isQuestion(message)) return;
    void app.inject({ method: 'GET', url: '/readyz' }).then(
      (res) => reply({ plantStore: 'ready', id: message.id, ...(res.statusCode === 200 ? {} : notReady(res.body)) }),
      (error: unknown) => reply({ plantStore: 'ready', id: message.id, notReady: (error as Error).message }),
    );
  };
  process.on('message', onMessage);
  return () => process.off('message', onMessage);
}

function reply(answer: Answer): void {
  // A primary gone (shutting down) asks nothing more.
  if (process.connected) process.send?.(answer, undefined, {}, () => {});
}

function notReady(body: string): { notReady: string } {
  try {
    const { message } = JSON.parse(body) as { message?: unknown };
    return { notReady: typeof message === 'string' ? message : 'not ready' };
  } catch {
    return { notReady: 'not ready' };
  }
}

let lastId = 0;

/** The primary's side: asks every worker; the first reason one is not ready, or undefined when all are. */
export async function workersNotReady(
  workers: Iterable<Worker>,
  timeoutMs = WORKER_READY_TIMEOUT_MS,
): Promise<string | undefined> {
  const answers = [...workers].map((worker, i) => askOne(worker, ++lastId, timeoutMs, i + 1));
  return (await Promise.all(answers)).find((why) => why !== undefined);
}

function askOne(worker: Worker, id: number, timeoutMs: number, n: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const done = (why: string | undefined) => {
      clearTimeout(timer);
      worker.off('message', onMessage);
      resolve(why);
    };
    const onMessage = (message: unknown) => {
      if (isAnswer(message) && message.id === id)
        done(message.notReady === undefined ? undefined : `worker ${n}: ${message.notReady}`);
    };
    const timer = setTimeout(() => done(`worker ${n} did not answer within ${timeoutMs} ms`), timeoutMs);
    worker.on('message', onMessage);
    if (!worker.isConnected()) return done(`worker ${n} is not connected`);
    worker.send({ plantStore: 'ready?', id } satisfies Question, undefined, {}, () => {});
  });
}
