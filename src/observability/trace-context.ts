/** W3C trace context (traceparent: version-traceid-parentid-flags). */
export interface TraceContext {
  readonly traceId: string;
  readonly spanId: string;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}$/;

export function parseTraceparent(header: string | string[] | undefined): TraceContext | undefined {
  if (typeof header !== 'string') return undefined;
  const m = TRACEPARENT.exec(header.trim().toLowerCase());
  if (m === null) return undefined;
  const [, traceId, spanId] = m as unknown as [string, string, string];
  // All-zero ids are invalid by the spec; treat the header as absent.
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId };
}

/** The traceparent header that carries a request's trace into the messages it causes (version 00, sampled). */
export function formatTraceparent(trace: TraceContext): string {
  return `00-${trace.traceId}-${trace.spanId}-01`;
}
