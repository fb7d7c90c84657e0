import type { Message } from 'kafkajs';
import { messageHeaders } from '../commands/command-context.js';
import type { CanonicalEvent } from '../generated/schema-types.js';

/** A canonical event as it goes onto platform.events: keyed by device_id, else project_id. */
export function eventMessage(event: CanonicalEvent): Message {
  return {
    key: event.device_id ?? event.project_id,
    value: JSON.stringify(event),
    headers: messageHeaders('canonical-event.schema.json'),
  };
}
