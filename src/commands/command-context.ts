import { formatTraceparent, type TraceContext } from '../observability/trace-context.js';

/** What every command handler is told about the request besides its own input. */
export interface CommandContext {
  readonly orgId: string;
  /** The caller's JWT sub. */
  readonly requestedBy: string;
  /** W3C trace context of the request, carried in the command's traceparent header into its canonical event. */
  readonly trace: TraceContext | undefined;
  /** The request's id, carried in the command's request-id header so the consumer's log line names it too. */
  readonly requestId: string | undefined;
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

export const REQUEST_ID_MESSAGE_HEADER = 'request-id';

/** Headers of a command message: the schema, the request's id, and its trace when it had one. */
export function commandHeaders(schema: string, context: CommandContext, extra: Readonly<Record<string, string>> = {}): Record<string, string> {
  return messageHeaders(schema, {
    ...(context.trace === undefined ? {} : { traceparent: formatTraceparent(context.trace) }),
    ...(context.requestId === undefined ? {} : { [REQUEST_ID_MESSAGE_HEADER]: context.requestId }),
    ...extra,
  });
}
