// A loopback OTLP/HTTP trace receiver for the tracing suites: takes what the
// service's exporter posts to /v1/traces, as JSON (http/json) or as protobuf
// (http/protobuf, decoded here from the wire format: the fields of
// ExportTraceServiceRequest the suites look at), and keeps the spans.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type AttributeValue = string | number | boolean;

/** A span as the receiver got it, in one shape whatever the protocol. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  /** OTLP's status code: 0 unset, 1 ok, 2 error. */
  status: number;
  /** The attributes of the resource that sent it (service.name, …). */
  resource: Record<string, AttributeValue>;
}

export const SERVER = 2;
export const CLIENT = 3;
export const INTERNAL = 1;

// --- protobuf wire format ---------------------------------------------------

type Field = { no: number; varint?: bigint; bytes?: Buffer };

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = buf[at++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  };
  while (at < buf.length) {
    const key = Number(varint());
    const [no, wire] = [key >>> 3, key & 7];
    if (wire === 0) out.push({ no, varint: varint() });
    else if (wire === 1) {
      out.push({ no, bytes: buf.subarray(at, at + 8) });
      at += 8;
    } else if (wire === 2) {
      const length = Number(varint());
      out.push({ no, bytes: buf.subarray(at, at + length) });
      at += length;
    } else if (wire === 5) {
      out.push({ no, bytes: buf.subarray(at, at + 4) });
      at += 4;
    } else throw new Error(`unexpected protobuf wire type ${wire}`);
  }
  return out;
}

const all = (fs: Field[], no: number) => fs.filter((f) => f.no === no);
const one = (fs: Field[], no: number) => fs.find((f) => f.no === no);

/** AnyValue: 1 string, 2 bool, 3 int, 4 double. */
function anyValue(buf: Buffer): AttributeValue {
  const f = fields(buf)[0];
  if (!f) return '';
  if (f.no === 1) return f.bytes!.toString('utf8');
  if (f.no === 2) return f.varint === 1n;
  if (f.no === 3) return Number(BigInt.asIntN(64, f.varint!));
  if (f.no === 4) return f.bytes!.readDoubleLE(0);
  return `(field ${f.no})`;
}

/** KeyValue: 1 key, 2 value. */
function keyValues(fs: Field[]): Record<string, AttributeValue> {
  return Object.fromEntries(
    fs.map((kv) => {
      const parts = fields(kv.bytes!);
      return [one(parts, 1)!.bytes!.toString('utf8'), anyValue(one(parts, 2)?.bytes ?? Buffer.alloc(0))];
    }),
  );
}

/** ExportTraceServiceRequest: 1 ResourceSpans (1 Resource, 2 ScopeSpans (2 Span)). */
function fromProtobuf(body: Buffer): ReceivedSpan[] {
  return all(fields(body), 1).flatMap((rs) => {
    const rsFields = fields(rs.bytes!);
    const resourceField = one(rsFields, 1);
    const resource = resourceField ? keyValues(all(fields(resourceField.bytes!), 1)) : {};
    return all(rsFields, 2).flatMap((ss) =>
      all(fields(ss.bytes!), 2).map((spanField): ReceivedSpan => {
        const s = fields(spanField.bytes!);
        const status = one(s, 15);
        return {
          traceId: one(s, 1)!.bytes!.toString('hex'),
          spanId: one(s, 2)!.bytes!.toString('hex'),
          parentSpanId: one(s, 4)?.bytes?.toString('hex') ?? '',
          name: one(s, 5)?.bytes?.toString('utf8') ?? '',
          kind: Number(one(s, 6)?.varint ?? 0n),
          attributes: keyValues(all(s, 9)),
          status: status ? Number(one(fields(status.bytes!), 3)?.varint ?? 0n) : 0,
          resource,
        };
      }),
    );
  });
}

// --- JSON ---------------------------------------------------------------------

interface JsonKeyValue {
  key: string;
  value: { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
}

const jsonAttributes = (kvs: JsonKeyValue[] = []): Record<string, AttributeValue> =>
  Object.fromEntries(
    kvs.map(({ key, value: v }) => [
      key,
      v.stringValue ??
        (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
        v.boolValue ??
        v.doubleValue ??
        '',
    ]),
  );

interface JsonRequest {
  resourceSpans?: {
    resource?: { attributes?: JsonKeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        attributes?: JsonKeyValue[];
        status?: { code?: number };
      }[];
    }[];
  }[];
}

function fromJson(body: Buffer): ReceivedSpan[] {
  const request = JSON.parse(body.toString('utf8')) as JsonRequest;
  return (request.resourceSpans ?? []).flatMap((rs) => {
    const resource = jsonAttributes(rs.resource?.attributes);
    return (rs.scopeSpans ?? []).flatMap((ss) =>
      (ss.spans ?? []).map((s) => ({
        traceId: s.traceId,
        spanId: s.spanId,
        parentSpanId: s.parentSpanId ?? '',
        name: s.name,
        kind: s.kind,
        attributes: jsonAttributes(s.attributes),
        status: s.status?.code ?? 0,
        resource,
      })),
    );
  });
}

// --- the receiver ---------------------------------------------------------------

export class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  /** The Content-Type of each export request, in order. */
  readonly contentTypes: string[] = [];
  readonly #server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const type = req.headers['content-type'] ?? '';
      this.contentTypes.push(type);
      const body = Buffer.concat(chunks);
      try {
        if (req.url !== '/v1/traces') throw new Error(`posted to ${req.url}`);
        this.spans.push(...(type.includes('json') ? fromJson(body) : fromProtobuf(body)));
        res.writeHead(200, { 'content-type': type }).end(type.includes('json') ? '{}' : '');
      } catch (error) {
        this.errors.push(String(error));
        res.writeHead(400).end();
      }
      for (const watch of this.#watchers) watch();
    });
  });
  readonly errors: string[] = [];
  readonly #watchers = new Set<() => void>();

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.#server.listen({ host: '127.0.0.1', port: 0 }, resolve));
    return this;
  }

  /** The base endpoint (OTEL_EXPORTER_OTLP_ENDPOINT); the exporter posts to its /v1/traces. */
  get endpoint(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  /** Resolves with the first span that matches once it has arrived; rejects after timeoutMs with what came. */
  waitForSpan(match: (span: ReceivedSpan) => boolean, what: string, timeoutMs = 10_000): Promise<ReceivedSpan> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.spans.find(match);
        if (!found) return;
        clearTimeout(timer);
        this.#watchers.delete(check);
        resolve(found);
      };
      const timer = setTimeout(() => {
        this.#watchers.delete(check);
        const seen = this.spans.map((s) => s.name).join(', ') || 'nothing';
        reject(new Error(`no span ${what} within ${timeoutMs} ms; received: ${seen} ${this.errors.join(' ')}`));
      }, timeoutMs);
      this.#watchers.add(check);
      check();
    });
  }

  async stop(): Promise<void> {
    this.#server.closeAllConnections();
    await new Promise((resolve) => this.#server.close(resolve));
  }
}
