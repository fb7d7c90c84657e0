import type { CanonicalEvent } from '../generated/schema-types.js';
import { compileByteValidator } from '../schemas/byte-validator.js';
import { schemasById } from '../schemas/schema-files.js';
import type { EventHead, StorableEvent } from '../store/event-store.js';
import { toStoreTimestamp } from '../store/timestamps.js';

const HEAD = ['id', 'org_id', 'project_id', 'occurred_at'] as const;

/** A canonical event checked as bytes: the object is built only if something asks for it (a row the store refused as text). */
class CheckedBytes implements StorableEvent {
  #event: CanonicalEvent | undefined;

  constructor(
    readonly json: Buffer,
    readonly head: EventHead,
    readonly storedAt: string,
  ) {}

  get event(): CanonicalEvent {
    // The bytes passed every rule of the schema, so what they parse to is a valid event.
    return (this.#event ??= JSON.parse(this.json.toString()) as CanonicalEvent);
  }
}

/**
 * Reads a canonical event from its UTF-8 bytes without parsing them, when the byte
 * validator is sure of them; undefined sends the message the full way (JSON.parse, AJV),
 * which accepts or refuses it and names the reason.
 */
export function createCanonicalEventReader(): (bytes: Buffer) => StorableEvent | undefined {
  const check = compileByteValidator(schemasById['canonical-event.schema.json'], HEAD);
  return (bytes) => {
    const found = check(bytes);
    if (found === undefined) return undefined;
    const [id, org_id, project_id, occurred_at] = found as [string, string, string, string];
    return new CheckedBytes(bytes, { id, org_id, project_id, occurred_at }, toStoreTimestamp(occurred_at));
  };
}
