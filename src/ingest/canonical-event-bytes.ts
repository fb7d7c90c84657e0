import type { CanonicalEvent } from '../generated/schema-types.js';
import { compileByteValidator } from '../schemas/byte-validator.js';
import { schemasById } from '../schemas/schema-files.js';
import type { EventHead, StorableEvent } from '../store/event-store.js';
import { plainUtcToStore } from '../store/timestamps.js';

const HEAD = ['id', 'org_id', 'project_id', 'occurred_at', 'domain', 'entity', 'action'] as const;

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
const isJsonWhitespace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;

/**
 * The JSON text inside a value as producers send it: without a UTF-8 byte order mark (which
 * RFC 8259 lets a reader ignore, and some Windows-side shippers write) and without the
 * whitespace around it (log shippers end each line with a line break, some pad). A view,
 * not a copy: the row is written from it.
 */
export function jsonTextOf(value: Buffer): Buffer {
  let start = value.length >= BOM.length && value[0] === BOM[0] && value[1] === BOM[1] && value[2] === BOM[2] ? BOM.length : 0;
  let end = value.length;
  while (start < end && isJsonWhitespace(value[start]!)) start++;
  while (end > start && isJsonWhitespace(value[end - 1]!)) end--;
  return start === 0 && end === value.length ? value : value.subarray(start, end);
}

/**
 * A canonical event checked as bytes. It is its own head, and the event object is built
 * only if something asks for it (a row the store refused as its text): every object made
 * per event is work for the garbage collector, which was a quarter of the consumer's CPU.
 */
class CheckedBytes implements StorableEvent, EventHead {
  #event: CanonicalEvent | undefined;

  constructor(
    /** The validator refuses every escape, every line break and every timestamp that is not plain UTC in the store's range: what the row's text needs. */
    readonly json: Buffer,
    readonly id: string,
    readonly org_id: string,
    readonly project_id: string,
    readonly occurred_at: string,
    readonly domain: string,
    readonly entity: string,
    readonly action: string,
    readonly storedAt: string,
  ) {}

  get head(): EventHead {
    return this;
  }

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
  const found: (string | undefined)[] = HEAD.map(() => undefined);
  return (value) => {
    const bytes = jsonTextOf(value);
    if (!check(bytes, found)) return undefined;
    const [id, org_id, project_id, occurred_at, domain, entity, action] = found as [string, string, string, string, string, string, string];
    // The validator takes only plain UTC timestamps in the store's range.
    return new CheckedBytes(bytes, id, org_id, project_id, occurred_at, domain, entity, action, plainUtcToStore(occurred_at));
  };
}
