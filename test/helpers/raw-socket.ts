// Raw sockets against a real server, for what an HTTP client hides:
// requests trickled a line at a time, connections that send nothing.
import net from 'node:net';

export interface Exchange {
  /** Everything the server sent. */
  data: string;
  /** Milliseconds from connecting until the server closed the connection. */
  closedAfterMs: number;
}

/**
 * Connects, lets `drive` write to the socket, and resolves when the server
 * closes the connection (or rejects after `limitMs`: the server kept it open).
 */
export function exchange(port: number, drive: (socket: net.Socket) => void, limitMs: number): Promise<Exchange> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const started = performance.now();
    let data = '';
    const limit = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${limitMs} ms; it sent: ${JSON.stringify(data)}`));
    }, limitMs);
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (data += d));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(limit);
      resolve({ data, closedAfterMs: performance.now() - started });
    });
    socket.on('connect', () => drive(socket));
  });
}

/** Writes `chunk` every `everyMs` until the socket closes. */
export function trickle(socket: net.Socket, chunk: string, everyMs: number): void {
  const timer = setInterval(() => {
    if (socket.writable) socket.write(chunk);
  }, everyMs);
  socket.once('close', () => clearInterval(timer));
}
