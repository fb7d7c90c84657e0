import { createHash } from 'node:crypto';
import type { CanonicalEvent } from '../generated/schema-types.js';
import { parseTraceparent } from '../observability/trace-context.js';
import { entryOfType, type GatewayCommand } from './catalogue.js';
import { SOURCE_SERVICE } from './command-context.js';

export type { GatewayCommand } from './catalogue.js';

// Fixed namespace of the name-based ids below; changing it would give every command's event a new id.
const EVENT_ID_NAMESPACE = Buffer.from('16e6ad8979764149abd397e1285335b9', 'hex');

/**
 * A name-based UUID (RFC 9562 version 5) of `name`: the same command always yields the
 * same event id, so a command delivered twice, or derived on two consumers, is folded by
 * the feed like any redelivered event.
 */
export function nameBasedUuid(name: string): string {
  const bytes = createHash('sha1').update(EVENT_ID_NAMESPACE).update(name, 'utf8').digest().subarray(0, 16);
  bytes[6] = (bytes[6]! & 0x0f) | 0x50;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The canonical event that announces an accepted command on the feed. It is a pure
 * function of the command message, so the command topic is the only thing the gateway
 * writes: the ingest consumer derives the event from it (docs/decisions/kafka-atomicity.md).
 * `traceparent` is the message's W3C trace-context header, if the request carried one.
 */
export function commandEvent(command: GatewayCommand, traceparent: string | undefined): CanonicalEvent {
  const trace = parseTraceparent(traceparent);
  const common = {
    org_id: command.org_id,
    project_id: command.project_id,
    occurred_at: command.requested_at,
    correlation_id: command.command_id,
    fleet_id: command.fleet_id,
    source_service: SOURCE_SERVICE,
    trace_id: trace?.traceId ?? null,
    span_id: trace?.spanId ?? null,
  };
  const entry = entryOfType(command.type);
  // The command was validated against its entry's schema, whose type is a const: only a bug gets here.
  if (entry === undefined) throw new Error(`no catalogue entry for command type ${command.type}`);
  const { domain, entity, action } = entry.event;
  return {
    id: nameBasedUuid(`${command.command_id}:${domain}.${entity}.${action}`),
    domain,
    entity,
    action,
    device_id: entry.event.deviceId(command),
    payload: entry.event.payload(command),
    ...common,
  };
}
