/** A thin fetch wrapper for driving the gateway over real HTTP. */
export interface HttpResponse<B = unknown> {
  readonly status: number;
  readonly headers: Headers;
  readonly body: B;
  readonly text: string;
}

export interface RequestOptions {
  readonly headers?: Record<string, string>;
  /** An object is sent as JSON; a string is sent as it is. */
  readonly body?: unknown;
}

/** Methods a client may send again when the connection closed under them: nothing they do is done twice (RFC 9110, 9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS']);

/** undici's report of a connection the server closed as the request went out on it. */
function connectionReset(error: unknown): boolean {
  const code = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  return error instanceof TypeError && (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET');
}

export async function request<B = unknown>(method: string, url: string, options: RequestOptions = {}): Promise<HttpResponse<B>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const send = () => fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
  // Most suites run their gateway in the test's own process. An event loop held up for a
  // second on a loaded machine lets the server's keep-alive timer close a connection the
  // client has just reused (undici stops reusing one a second before the server's timeout),
  // and the request meets a reset. An idempotent request goes again once, as clients do.
  const response = await send().catch((error: unknown) => {
    if (!IDEMPOTENT.has(method.toUpperCase()) || !connectionReset(error)) throw error;
    return send();
  });
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed as B, text };
}
