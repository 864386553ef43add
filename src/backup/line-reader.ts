// Lines of a stream, each at most a given number of bytes. readline keeps a
// line in memory however long it grows, so one 300 MB line of garbage would
// exhaust the heap; this reader refuses a line as soon as it passes the cap.

/** Thrown when a line is longer than the cap; `line` is its 1-based number. */
export class LineTooLongError extends Error {
  override name = 'LineTooLongError';
  constructor(
    readonly line: number,
    readonly maxBytes: number,
  ) {
    super(`line ${line} is longer than ${maxBytes} bytes`);
  }
}

/** The stream's lines as UTF-8 text, without their "\n" (or "\r\n"). */
export async function* boundedLines(input: AsyncIterable<Buffer | string>, maxBytes: number): AsyncGenerator<string> {
  let parts: Buffer[] = [];
  let size = 0;
  let line = 1;
  const take = (last: Buffer): string => {
    const bytes = parts.length === 0 ? last : Buffer.concat([...parts, last]);
    parts = [];
    size = 0;
    line++;
    const text = bytes.toString('utf8');
    return text.endsWith('\r') ? text.slice(0, -1) : text;
  };
  for await (const chunk of input) {
    let buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let nl = buf.indexOf(10); nl !== -1; nl = buf.indexOf(10)) {
      if (size + nl > maxBytes) throw new LineTooLongError(line, maxBytes);
      yield take(buf.subarray(0, nl));
      buf = buf.subarray(nl + 1);
    }
    size += buf.length;
    if (size > maxBytes) throw new LineTooLongError(line, maxBytes);
    // Copied: the stream may reuse its buffer.
    if (buf.length > 0) parts.push(Buffer.from(buf));
  }
  if (size > 0) yield take(Buffer.alloc(0));
}
