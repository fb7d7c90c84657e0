import { connect, type Socket } from 'node:net';

/**
 * HTTP/1.1 over a bare socket, for requests fetch() refuses to send: bytes that are not
 * valid in a header, bodies that stop short of their Content-Length, broken chunking,
 * clients that trickle a byte at a time.
 */
export interface RawResponse {
  readonly status: number;
  /** Header names lower-cased; a repeated header keeps its last value. */
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
}

export type RawOutcome =
  /** A whole answer arrived, `afterMs` after the first byte was written. */
  | { readonly kind: 'response'; readonly response: RawResponse; readonly afterMs: number }
  /** The server closed the connection without a byte of answer. */
  | { readonly kind: 'closed'; readonly afterMs: number }
  /** Bytes that are not an HTTP response. */
  | { readonly kind: 'garbage'; readonly text: string }
  /** Neither an answer nor a close within the wait. */
  | { readonly kind: 'timeout' };

export interface RawExchangeOptions {
  /** Longest wait for the answer and the close, from the first byte written. */
  readonly waitMs?: number;
  /** Half-close our side once everything is written (a client that gives up mid-body). */
  readonly endAfterWrite?: boolean;
  /** The request was a HEAD: the answer has headers only. */
  readonly bodiless?: boolean;
}

/**
 * The final response in the bytes received so far (interim 1xx answers skipped), or
 * undefined while it is incomplete. `bodiless` is for answers to HEAD, which carry
 * a Content-Length but no body.
 */
export function parseResponse(bytes: Buffer, bodiless = false): RawResponse | undefined {
  const headEnd = bytes.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  if (/^HTTP\/1\.[01] 1\d\d/.test(bytes.subarray(0, 12).toString('latin1'))) return parseResponse(bytes.subarray(headEnd + 4), bodiless);
  const [statusLine, ...lines] = bytes.subarray(0, headEnd).toString('latin1').split('\r\n');
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine ?? '');
  if (match === null) throw new Error(`not an HTTP response: ${JSON.stringify(statusLine)}`);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const rest = bytes.subarray(headEnd + 4);
  const status = Number(match[1]);
  if (bodiless || status === 204 || status === 304) return { status, headers, body: '' };
  if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
    const body = dechunk(rest);
    return body === undefined ? undefined : { status, headers, body: body.toString('utf8') };
  }
  const length = headers['content-length'] === undefined ? 0 : Number(headers['content-length']);
  if (rest.length < length) return undefined;
  return { status, headers, body: rest.subarray(0, length).toString('utf8') };
}

function dechunk(bytes: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = bytes.indexOf('\r\n', at);
    if (lineEnd < 0) return undefined;
    const size = parseInt(bytes.subarray(at, lineEnd).toString('latin1'), 16);
    if (Number.isNaN(size)) throw new Error('bad chunk size in response');
    if (size === 0) return Buffer.concat(parts);
    if (bytes.length < lineEnd + 2 + size + 2) return undefined;
    parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

function openSocket(base: URL): Promise<Socket> {
  return new Promise((done, fail) => {
    const socket = connect({ host: base.hostname, port: Number(base.port) }, () => {
      socket.off('error', fail);
      done(socket);
    });
    socket.once('error', fail);
  });
}

export interface RawConnection {
  readonly socket: Socket;
  /** Settles with the first whole answer, a close without one, or the end of the wait. */
  readonly outcome: Promise<RawOutcome>;
}

/** Opens a connection and watches what the server sends back; the caller writes. */
export async function rawConnection(base: URL, options: Pick<RawExchangeOptions, 'waitMs' | 'bodiless'> = {}): Promise<RawConnection> {
  const socket = await openSocket(base);
  const started = Date.now();
  const outcome = new Promise<RawOutcome>((done) => {
    const received: Buffer[] = [];
    let settled = false;
    const finish = (result: RawOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      done(result);
    };
    const parsed = (): RawResponse | undefined => {
      try {
        return parseResponse(Buffer.concat(received), options.bodiless);
      } catch {
        finish({ kind: 'garbage', text: Buffer.concat(received).toString('latin1').slice(0, 500) });
        return undefined;
      }
    };
    const timer = setTimeout(() => finish({ kind: 'timeout' }), options.waitMs ?? 10_000);
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      const response = parsed();
      // A whole answer is enough: waiting for the close as well would only slow the caller.
      if (response !== undefined) finish({ kind: 'response', response, afterMs: Date.now() - started });
    });
    // A reset is a close like any other; what matters is whether an answer came first.
    socket.on('error', () => undefined);
    socket.on('close', () => {
      const response = received.length === 0 ? undefined : parsed();
      const afterMs = Date.now() - started;
      finish(response === undefined ? { kind: 'closed', afterMs } : { kind: 'response', response, afterMs });
    });
  });
  return { socket, outcome };
}

/** Writes `request` as it is and waits for one whole answer, or the close. It never throws for what the server did. */
export async function rawExchange(base: URL, request: Buffer | readonly Buffer[], options: RawExchangeOptions = {}): Promise<RawOutcome> {
  const { socket, outcome } = await rawConnection(base, options);
  const pieces = Buffer.isBuffer(request) ? [request] : request;
  for (const piece of pieces) socket.write(piece);
  if (options.endAfterWrite === true) socket.end();
  return outcome;
}

export interface RawRequestOptions {
  /** The protocol of the request line; HTTP/1.1 unless given. */
  readonly version?: string | undefined;
  /** Leave out Host, which is otherwise added when absent. */
  readonly withoutHost?: boolean | undefined;
}

/** A request's bytes: request line, headers (Host and Connection: close added unless given) and body as framed by the caller. */
export function rawRequestBytes(
  method: string,
  target: string | Buffer,
  headers: readonly (readonly [string, string | Buffer])[],
  body: Buffer = Buffer.alloc(0),
  options: RawRequestOptions = {},
): Buffer {
  const version = options.version ?? 'HTTP/1.1';
  const names = new Set(headers.map(([name]) => name.toLowerCase()));
  const all: (readonly [string, string | Buffer])[] = [...headers];
  if (!names.has('host') && options.withoutHost !== true) all.unshift(['Host', 'localhost']);
  if (!names.has('connection')) all.push(['Connection', 'close']);
  const head = [Buffer.from(`${method} `, 'latin1'), Buffer.isBuffer(target) ? target : Buffer.from(target, 'latin1'), Buffer.from(` ${version}\r\n`, 'latin1')];
  for (const [name, value] of all) {
    head.push(Buffer.from(`${name}: `, 'latin1'), Buffer.isBuffer(value) ? value : Buffer.from(value, 'latin1'), Buffer.from('\r\n'));
  }
  head.push(Buffer.from('\r\n'));
  return Buffer.concat([...head, body]);
}
