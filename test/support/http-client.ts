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

export async function request<B = unknown>(method: string, url: string, options: RequestOptions = {}): Promise<HttpResponse<B>> {
  const headers: Record<string, string> = { ...options.headers };
  let body: string | undefined;
  if (typeof options.body === 'string') body = options.body;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  const response = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await response.text();
  let parsed: unknown = undefined;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  return { status: response.status, headers: response.headers, body: parsed as B, text };
}
