import type { StorableEvent } from './event-store.js';
import { toEventRow } from './event-rows.js';
import type { JsonRowText } from './sql-transport.js';

const BACKSLASH = 0x5c;
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

/** The occurred_at forms ClickHouse's best-effort reader stores exactly as toStoreTimestamp does: UTC, up to nine fraction digits (both cut to six). */
const PLAIN_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/;

/**
 * Whether the event's own JSON text is written as its row: only where the byte reader
 * (src/ingest/canonical-event-bytes.ts) proved, while it read the text, that it stores
 * exactly the row toEventRow would write. The canonical event's fields are the table's
 * columns by name and type (schemas/canonical-event.schema.json has no other properties),
 * UUID columns read either case, and the payload object is kept as its JSON text
 * (INSERT_SETTINGS). The reader refuses the rest: an occurred_at the insert's best-effort
 * date reader could take to another instant, a backslash anywhere (a key spelled with an
 * escape is one key to JSON.parse and may be another to the engine), a key given twice
 * (which the engine refuses and JSON.parse forgives), and a line break (an insert body is
 * one row per line). Any other text is encoded from what validation read.
 */
export function passesThrough(event: StorableEvent): event is StorableEvent & { readonly json: Buffer } {
  return event.json !== undefined;
}

/** What the byte reader proves of an event's own text `json`, checked again from the text itself: for tests that hold the reader to it. */
export function jsonReadsAsRow(event: StorableEvent, json: Buffer): boolean {
  const at = event.head.occurred_at;
  if (!PLAIN_UTC.test(at)) return false;
  // Same date and time of day: a day or second that does not exist was rolled over by the conversion.
  if (event.storedAt.slice(0, 10) !== at.slice(0, 10) || event.storedAt.slice(11, 19) !== at.slice(11, 19)) return false;
  if (json.length === 0 || json[0] !== OPEN_BRACE || json[json.length - 1] !== CLOSE_BRACE) return false;
  return json.indexOf(BACKSLASH) === -1 && json.indexOf(LINE_FEED) === -1 && json.indexOf(CARRIAGE_RETURN) === -1;
}

/**
 * The event's row as JSONEachRow text. Telemetry that arrives as plain JSON goes as the
 * bytes it came in: encoding each event again (an object per row, then JSON.stringify,
 * then the batch joined and turned into bytes) took about 6 µs of the consumer's 10 µs
 * per event, and the engine parses either text the same way.
 */
export function eventRowText(event: StorableEvent): JsonRowText {
  if (passesThrough(event)) return event.json;
  return JSON.stringify(toEventRow(event.event, event.storedAt));
}
