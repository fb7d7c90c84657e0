import type { StorableEvent } from './event-store.js';
import { toEventRow } from './event-rows.js';
import type { JsonRowText } from './sql-transport.js';

const BACKSLASH = 0x5c;

/** The occurred_at forms ClickHouse's best-effort reader stores exactly as toStoreTimestamp does: UTC, up to nine fraction digits (both cut to six). */
const PLAIN_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?Z$/;

/**
 * Whether the event's own JSON text, written as its row, stores exactly the row
 * toEventRow would write. The canonical event's fields are the table's columns by name
 * and type (schemas/canonical-event.schema.json has no other properties), UUID columns
 * read either case, and the payload object is kept as its JSON text
 * (INSERT_SETTINGS). What remains:
 * - occurred_at must be a form the insert's best-effort date reader takes to the same
 *   instant; a leap second or an offset is converted here instead, so the stored value
 *   is the one validation computed;
 * - no backslash anywhere: a key spelled with an escape (`"\u0069d"`) is one JSON key to
 *   JSON.parse and may be another to the engine, so the two could read different values.
 * A text with a top-level key twice passes this test, and the engine refuses it
 * (INCORRECT_DATA); the ingestor then writes that event encoded, as JSON.parse read it.
 */
export function passesThrough(event: StorableEvent): event is StorableEvent & { readonly json: Buffer } {
  if (event.json === undefined) return false;
  // The byte reader proved all of it while it read the text; scanning it again cost the consumer 1.6% of its CPU.
  return event.jsonIsRow === true || jsonReadsAsRow(event, event.json);
}

/** What passesThrough() checks of an event's own text `json`, read from the text itself. */
export function jsonReadsAsRow(event: StorableEvent, json: Buffer): boolean {
  const at = event.head.occurred_at;
  if (!PLAIN_UTC.test(at)) return false;
  // Same date and time of day: a day or second that does not exist was rolled over by the conversion.
  if (event.storedAt.slice(0, 10) !== at.slice(0, 10) || event.storedAt.slice(11, 19) !== at.slice(11, 19)) return false;
  return json.indexOf(BACKSLASH) === -1;
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
