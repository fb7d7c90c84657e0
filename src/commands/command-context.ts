import { formatTraceparent, type TraceContext } from '../trace-context.js';

/** What every command handler is told about the request besides its own input. */
export interface CommandContext {
  readonly orgId: string;
  /** The caller's JWT sub. */
  readonly requestedBy: string;
  /** W3C trace context of the request, carried in the command's traceparent header into its canonical event. */
  readonly trace: TraceContext | undefined;
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

/** Headers of a command message: the schema, and the request's trace when it had one. */
export function commandHeaders(schema: string, context: CommandContext, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return messageHeaders(schema, { ...(context.trace === undefined ? {} : { traceparent: formatTraceparent(context.trace) }), ...extra });
}
