/** One dispatched Server-Sent Event, as an EventSource would hand it over. */
export interface SseMessage {
  readonly id: string | undefined;
  readonly event: string | undefined;
  readonly data: string;
}

export interface SseStream {
  readonly messages: readonly SseMessage[];
  /** Comment lines (": heartbeat" arrives as "heartbeat"). */
  readonly comments: readonly string[];
  /** The last `retry:` value, and whether it came before anything else. */
  readonly retry: number | undefined;
  readonly retryFirst: boolean;
  /** Whether the server ended the stream. */
  readonly ended: boolean;
  /** Resolves once `holds` is true of what arrived, or fails after `timeoutMs` naming `what`. */
  until(what: string, holds: (stream: SseStream) => boolean, timeoutMs?: number): Promise<void>;
  /** Disconnects, as a client going away does. */
  close(): Promise<void>;
}

export interface SseResponse {
  readonly status: number;
  readonly headers: Headers;
  /** The parsed JSON body of an answer that is not a stream (an error envelope). */
  readonly body: unknown;
  /** The open stream of a 200 answer. */
  readonly stream: SseStream | undefined;
}

/**
 * Parses text/event-stream as the WHATWG HTML spec describes (lines end in CR, LF or CRLF;
 * a blank line dispatches; ":" starts a comment; one space after the colon is dropped).
 */
class SseParser {
  readonly messages: SseMessage[] = [];
  readonly comments: string[] = [];
  retry: number | undefined;
  retryFirst = false;
  private pending = '';
  private data: string[] = [];
  private id: string | undefined;
  private event: string | undefined;
  private seenAnything = false;

  push(text: string): void {
    this.pending += text;
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.pending);
      // A lone CR at the end may be the first half of a CRLF: wait for the next chunk.
      if (match === null || (match[0] === '\r' && match.index === this.pending.length - 1)) return;
      const line = this.pending.slice(0, match.index);
      this.pending = this.pending.slice(match.index + match[0].length);
      this.line(line);
    }
  }

  private line(line: string): void {
    if (line === '') {
      if (this.data.length > 0) this.messages.push({ id: this.id, event: this.event, data: this.data.join('\n') });
      this.data = [];
      this.event = undefined;
      return;
    }
    if (line.startsWith(':')) {
      this.comments.push(line.slice(1).trim());
      this.seenAnything = true;
      return;
    }
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '');
    if (field === 'data') this.data.push(value);
    else if (field === 'id') this.id = value;
    else if (field === 'event') this.event = value;
    else if (field === 'retry' && /^\d+$/.test(value)) {
      this.retryFirst ||= !this.seenAnything;
      this.retry = Number(value);
    }
    this.seenAnything = true;
  }
}

/** Opens an event stream with fetch and reads it in the background. */
export async function openEventStream(url: string, headers: Record<string, string>): Promise<SseResponse> {
  const abort = new AbortController();
  const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
  if (response.status !== 200 || response.body === null) {
    const text = await response.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = text;
    }
    return { status: response.status, headers: response.headers, body, stream: undefined };
  }

  const parser = new SseParser();
  const waiters = new Set<() => void>();
  let ended = false;
  const notify = () => {
    for (const waiter of [...waiters]) waiter();
  };
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const pump = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
        notify();
      }
    } catch {
      // Aborted by close(), or the connection was cut: either way the stream is over.
    } finally {
      ended = true;
      notify();
    }
  })();

  const stream: SseStream = {
    get messages() {
      return parser.messages;
    },
    get comments() {
      return parser.comments;
    },
    get retry() {
      return parser.retry;
    },
    get retryFirst() {
      return parser.retryFirst;
    },
    get ended() {
      return ended;
    },
    until(what, holds, timeoutMs = 15_000) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          const held = holds(stream);
          if (!held && !ended) return;
          clearTimeout(timer);
          waiters.delete(onChange);
          if (held) resolve();
          else reject(new Error(`the stream ended while waiting for ${what}; got ${JSON.stringify(parser.messages.map((m) => m.id))}`));
        };
        const onChange = () => check();
        const timer = setTimeout(() => {
          waiters.delete(onChange);
          reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; got ${JSON.stringify(parser.messages.map((m) => m.id))}`));
        }, timeoutMs);
        waiters.add(onChange);
        check();
      });
    },
    async close() {
      abort.abort();
      await pump;
    },
  };
  return { status: response.status, headers: response.headers, body: undefined, stream };
}
