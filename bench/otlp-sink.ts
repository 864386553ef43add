// A loopback OTLP/HTTP receiver for the traced scenarios: takes every export
// (protobuf, the default protocol), answers 200 and keeps only the count of
// bytes, so that the service's cost of tracing is measured, not a collector's.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OtlpSink {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for the service. */
  endpoint: string;
  /** Export requests and their bytes so far. */
  received(): { requests: number; bytes: number };
  close(): Promise<void>;
}

export async function startOtlpSink(): Promise<OtlpSink> {
  let [requests, bytes] = [0, 0];
  const server = http.createServer((req, res) => {
    req.on('data', (chunk: Buffer) => (bytes += chunk.length));
    req.on('end', () => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received: () => ({ requests, bytes }),
    close: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
