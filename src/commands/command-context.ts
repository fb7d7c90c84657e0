/** What every command handler is told about the request besides its own input. */
export interface CommandContext {
  readonly orgId: string;
  /** The caller's JWT sub. */
  readonly requestedBy: string;
  /** W3C trace context of the request, carried into the canonical event. */
  readonly trace: { readonly traceId: string; readonly spanId: string } | undefined;
}

/** Clock and id source, injected so that tests can pin them. */
export interface CommandEnvironment {
  readonly now: () => Date;
  readonly newId: () => string;
}

export const SOURCE_SERVICE = 'core-gateway';

export function messageHeaders(schema: string, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return { 'content-type': 'application/json', schema, 'schema-version': '1', ...extra };
}
