/** One Server-Sent Event as the wire carries it. */
export interface ServerSentEvent {
  /** The id field, when the event had one. */
  id: string | undefined;
  /** The event field ("message" when absent). */
  event: string;
  data: string;
}

/**
 * The events of a text/event-stream body, parsed as the HTML standard says
 * (lines end in CRLF, LF or CR; ":" starts a comment; a blank line ends an
 * event). Works on any ReadableStream of bytes, so in browsers too.
 */
export async function* readEventStream(body: ReadableStream<Uint8Array>): AsyncGenerator<ServerSentEvent> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let id: string | undefined;
  let event = '';
  let data: string[] = [];
  try {
    for (;;) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      let start = 0;
      for (;;) {
        const end = buffer.slice(start).search(/\r\n|\r|\n/);
        if (end < 0) break;
        const line = buffer.slice(start, start + end);
        // A lone CR at the end of the buffer may be the first half of a CRLF.
        if (buffer[start + end] === '\r' && start + end + 1 === buffer.length && !done) break;
        start += end + (buffer.startsWith('\r\n', start + end) ? 2 : 1);
        if (line === '') {
          if (data.length > 0) yield { id, event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'data') data.push(value);
        else if (field === 'event') event = value;
        else if (field === 'id' && !value.includes('\0')) id = value;
      }
      buffer = buffer.slice(start);
      if (done) return;
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
