import { isUtf8 } from 'node:buffer';
import { entryOfFormat, type CommandFormat } from '../commands/catalogue.js';
import { commandEvent } from '../commands/command-event.js';
import { AppError, type FieldErrors } from '../errors/app-error.js';
import type { CanonicalEvent } from '../generated/schema-types.js';
import { readBoundedJson } from '../json/bounded-json.js';
import type { SchemaRegistry } from '../schemas/schema-registry.js';
import { passesThrough } from '../store/event-row-text.js';
import type { EventHead, EventStore, StorableEvent } from '../store/event-store.js';
import { answeredRefusal, describeRefusal, rowRefusal, storeCannotWrite, type RowRefusal } from '../store/store-refusal.js';
import { toStoreTimestamp, TimestampError } from '../store/timestamps.js';
import { bisectInsert } from './bisect-insert.js';
import { createCanonicalEventReader, jsonTextOf } from './canonical-event-bytes.js';

/** Where a message was read from; carried into dead-letter headers. */
export interface MessageSource {
  readonly topic: string;
  readonly partition: number;
  readonly offset: string;
}

/**
 * What a message holds: a canonical event (what other services publish), or one of the
 * gateway's commands, whose canonical event is derived from it (src/commands/command-event.ts).
 */
export type MessageFormat = 'canonical-event' | CommandFormat;

export interface RawEventMessage {
  /** The Kafka timestamp (ms since the epoch, as text), for a message read from Kafka. */
  readonly timestamp?: string;
  /** Absent means a canonical event. */
  readonly format?: MessageFormat;
  readonly value: Buffer | string | null;
  /** Kept so that a dead-lettered message goes out as it came in. */
  readonly key?: Buffer | string | null;
  readonly headers?: Readonly<Record<string, Buffer | string>>;
  readonly source?: MessageSource;
}

/**
 * Why a message is dead-lettered; also the values of the `reason` label of
 * ingest_dead_lettered_total. All but the last are found by validation: `invalid-json` is
 * a value that is not UTF-8 JSON text, `json-limit-exceeded` one that breaks the JSON
 * rules HTTP bodies keep too (src/json/bounded-json.ts: nesting, `__proto__`, numbers
 * beyond a double). `store-rejected` is a valid event whose write failed on its own: the
 * store refused it, or encoding it for the store failed (src/ingest/bisect-insert.ts).
 */
export const REJECT_REASONS = ['empty-value', 'invalid-json', 'json-limit-exceeded', 'schema-violation', 'timestamp-out-of-range', 'store-rejected'] as const;
export type RejectReason = (typeof REJECT_REASONS)[number];

export interface RejectedMessage {
  readonly message: RawEventMessage;
  readonly reason: RejectReason;
  /** Human-readable account of what was wrong, for the dead-letter headers. */
  readonly detail: string;
}

export interface IngestResult {
  readonly stored: number;
  readonly rejected: readonly RejectedMessage[];
}

/**
 * The store failed for a reason that is not a verdict on the rows (it is down, slow or out
 * of room): nothing of the batch may be acknowledged, and the same batch may well be
 * stored once it recovers.
 */
export class SickStoreError extends Error {
  override readonly name = 'SickStoreError';
}

/**
 * Told of each message whose event the store acknowledged, and when (ms): how the consumer
 * measures how old events are when they become visible (src/ingest/freshness.ts).
 */
export type VisibleObserver = (message: RawEventMessage, head: EventHead, visibleAtMs: number) => void;

export interface EventIngestor {
  /**
   * Validates a batch of raw messages and stores the valid events in one write. Invalid
   * messages are returned, never thrown, so one bad message cannot stop its partition;
   * so are valid events the store refuses for their data, found by splitting the write
   * (`store-rejected`), while the rest of the batch is stored. Rejects only when the store
   * is sick (SickStoreError), in which case nothing of the batch may be acknowledged.
   */
  ingestMessages(messages: readonly RawEventMessage[], visible?: VisibleObserver): Promise<IngestResult>;
  /** Stores events the process built itself; an invalid one is a bug and throws. */
  ingestEvents(events: readonly CanonicalEvent[]): Promise<void>;
}

type Parsed = { ok: true; storable: StorableEvent } | { ok: false; reason: RejectReason; detail: string };

/** A valid event of the batch and the message that carried it. */
interface Carried {
  readonly storable: StorableEvent;
  readonly message: RawEventMessage;
  readonly index: number;
}

/**
 * What makes two events one: the whole sort key of the events table, which is also what
 * the store folds copies by (src/store/migrations.ts). Two organizations' events that
 * share an id are two events; a redelivered copy has the same key, its timestamp
 * normalized as stored.
 */
function eventIdentity({ head, storedAt }: StorableEvent): string {
  return `${head.org_id.toLowerCase()}/${head.project_id.toLowerCase()}/${storedAt}/${head.id.toLowerCase()}`;
}

/** The items of a batch with each event once, and the copies a redelivery added. */
interface Folded<T> {
  /** The first item of each event, in the order each event first came. */
  readonly firsts: T[];
  /** The later items of an event, by its first item: only for an event that came more than once. */
  readonly copiesOf: ReadonlyMap<T, readonly T[]>;
}

/**
 * Copies inside one write are written once; across writes the store folds them. Items are
 * matched by id first and the whole identity is built only for an id seen again, since
 * building it for every event of a batch cost the consumer 5% of its CPU; and nothing is
 * made per event but the id's entry, since every object per event is garbage to collect.
 */
function foldCopies<T extends { readonly storable: StorableEvent }>(items: readonly T[]): Folded<T> {
  // The first items seen with an id: one, or several when events of other identities share it.
  const byId = new Map<string, T | T[]>();
  const firsts: T[] = [];
  const copiesOf = new Map<T, T[]>();
  for (const item of items) {
    const id = item.storable.head.id.toLowerCase();
    const seen = byId.get(id);
    if (seen === undefined) {
      byId.set(id, item);
      firsts.push(item);
      continue;
    }
    const identity = eventIdentity(item.storable);
    const sameId = Array.isArray(seen) ? seen : [seen];
    const first = sameId.find((candidate) => eventIdentity(candidate.storable) === identity);
    if (first === undefined) {
      byId.set(id, [...sameId, item]);
      firsts.push(item);
    } else {
      const copies = copiesOf.get(first);
      if (copies === undefined) copiesOf.set(first, [item]);
      else copies.push(item);
    }
  }
  return { firsts, copiesOf };
}

function describeFields(fields: FieldErrors): string {
  return Object.entries(fields)
    .map(([name, problem]) => `${name.replace(/^message\.?/, '') || '(root)'} ${problem}`)
    .join('; ');
}

/**
 * The erased scopes whose events are dropped on arrival (src/store/erasure-suppressions.ts,
 * docs/decisions/erasure.md): neither stored nor dead-lettered, so that a message still on
 * Kafka, or replayed from the dead-letter topic, cannot bring an erased event back.
 */
export interface IngestSuppression {
  /** Whether the event is suppressed; `deviceOf` is asked only when a device's erasure could cover it. */
  covers(head: EventHead, deviceOf: () => string | null | undefined): boolean;
  /** Told how many events of a write it dropped. */
  dropped(count: number): void;
}

export function createEventIngestor(deps: { store: EventStore; schemas: SchemaRegistry; suppression?: IngestSuppression | undefined }): EventIngestor {
  const { schemas, suppression } = deps;
  /** Whether an erasure covers the event; a byte-read event builds its object only when a device's erasure of its organization asks for its device. */
  const suppressed = (storable: StorableEvent): boolean => suppression !== undefined && suppression.covers(storable.head, () => storable.event.device_id);
  const readCanonicalEvent = createCanonicalEventReader();

  function parse(value: unknown): Parsed {
    const checked = schemas.check('canonical-event.schema.json', value);
    if (!checked.ok) return { ok: false, reason: 'schema-violation', detail: describeFields(checked.fields) };
    let storedAt: string;
    try {
      storedAt = toStoreTimestamp(checked.value.occurred_at);
    } catch (error) {
      if (error instanceof TimestampError) return { ok: false, reason: 'timestamp-out-of-range', detail: error.message };
      throw error;
    }
    return { ok: true, storable: { event: checked.value, head: checked.value, storedAt } };
  }

  function parseRaw(message: RawEventMessage): Parsed {
    const { value } = message;
    if (value === null || value.length === 0) {
      return { ok: false, reason: 'empty-value', detail: 'message has no value' };
    }
    // JSON text is UTF-8 (RFC 8259); decoding other bytes would store U+FFFD in their place, silently.
    if (typeof value !== 'string' && !isUtf8(value)) {
      return { ok: false, reason: 'invalid-json', detail: 'message value is not UTF-8 text' };
    }
    const format = message.format ?? 'canonical-event';
    if (format === 'canonical-event' && typeof value !== 'string') {
      const checked = readCanonicalEvent(value);
      if (checked !== undefined) return { ok: true, storable: checked };
    }
    const reading = readBoundedJson(typeof value === 'string' ? value.replace(/^\uFEFF/, '') : jsonTextOf(value).toString());
    if (!reading.ok) {
      const reason = reading.problem === 'not-json' ? 'invalid-json' : 'json-limit-exceeded';
      return { ok: false, reason, detail: `message value ${reading.detail}` };
    }
    // Read the full way, the event is written encoded from what JSON.parse read: its text may hold what the engine reads otherwise (a key twice, an escape, a line break).
    if (format === 'canonical-event') return parse(reading.value);
    const command = schemas.check(entryOfFormat(format).schemas.command, reading.value);
    if (!command.ok) return { ok: false, reason: 'schema-violation', detail: describeFields(command.fields) };
    return parse(commandEvent(command.value, message.headers?.['traceparent']?.toString()));
  }

  const insert = (part: readonly Carried[]) => deps.store.insertEvents(part.map((c) => c.storable));

  /**
   * What a failed insert says about its rows. Known refusals of values are the rows'; the
   * store's own word that it cannot write now is waited out (undefined). Anything else is
   * nobody's guess: the store is asked for a known-good write, and if it takes it, it
   * answers, so the failure was about these rows and the search goes on to find which.
   * Such a guess is doubtful: a row it would dead-letter is inserted alone once more first
   * (a single timeout on a one-event batch, the store still writing it, was enough before).
   */
  const guessed = new WeakSet<RowRefusal>();
  async function refusal(error: unknown): Promise<RowRefusal | undefined> {
    const known = rowRefusal(error);
    if (known !== undefined) return known;
    if (storeCannotWrite(error)) return undefined;
    try {
      await deps.store.probeWrite();
    } catch {
      return undefined;
    }
    const guess = answeredRefusal(error);
    guessed.add(guess);
    return guess;
  }
  const doubt = (refused: RowRefusal) => guessed.has(refused);

  /**
   * Stores the events, isolating the ones the store refuses on their own; a sick store
   * rejects with SickStoreError. An event refused as its own text (a key given twice, which
   * JSON.parse forgives and the engine does not) is written once more encoded from what
   * validation read, and only a refusal of that is the event's.
   */
  async function store(items: readonly Carried[]) {
    try {
      const first = await bisectInsert(items, { insert, refusal, doubt });
      const again = first.refused.filter(({ item }) => passesThrough(item.storable));
      if (again.length === 0) return first;
      // Named field by field, not spread: an event checked as bytes builds `event` in a getter, which a spread would drop.
      const encoded = await bisectInsert(
        again.map(({ item }) => ({ ...item, storable: { event: item.storable.event, head: item.storable.head, storedAt: item.storable.storedAt } })),
        { insert, refusal, doubt },
      );
      return { refused: [...first.refused.filter(({ item }) => !passesThrough(item.storable)), ...encoded.refused] };
    } catch (error) {
      throw new SickStoreError('event store failed for a reason that is not about the rows', { cause: error });
    }
  }

  return {
    async ingestMessages(messages, visible) {
      const rejected: { readonly index: number; readonly rejection: RejectedMessage }[] = [];
      const valid: Carried[] = [];
      let dropped = 0;
      messages.forEach((message, index) => {
        const parsed = parseRaw(message);
        if (!parsed.ok) rejected.push({ index, rejection: { message, reason: parsed.reason, detail: parsed.detail } });
        else if (suppressed(parsed.storable)) dropped += 1;
        else valid.push({ message, index, storable: parsed.storable });
      });
      if (dropped > 0) suppression?.dropped(dropped);
      const { firsts, copiesOf } = foldCopies(valid);
      const { refused } = await store(firsts);
      // By message: a refused item may be a re-encoded copy of the one folded.
      const copiesByMessage = new Map([...copiesOf].map(([first, copies]) => [first.message, copies]));
      let refusedMessages = 0;
      for (const { item, refusal } of refused) {
        // Every copy goes with the event: none of them was stored, and each must be accounted for before its offset is committed.
        for (const { message, index } of [item, ...(copiesByMessage.get(item.message) ?? [])]) {
          rejected.push({ index, rejection: { message, reason: 'store-rejected', detail: describeRefusal(refusal) } });
          refusedMessages += 1;
        }
      }
      if (visible !== undefined) {
        // Copies count too: each is a message the consumer read, visible from now on.
        const visibleAtMs = Date.now();
        const refusedSet = refusedMessages === 0 ? undefined : new Set(rejected.map((r) => r.rejection.message));
        for (const { message, storable } of valid) if (refusedSet?.has(message) !== true) visible(message, storable.head, visibleAtMs);
      }
      // Dead letters in the order the messages came, whichever step refused them.
      rejected.sort((a, b) => a.index - b.index);
      return { stored: valid.length - refusedMessages, rejected: rejected.map((r) => r.rejection) };
    },
    async ingestEvents(events) {
      const valid: { readonly storable: StorableEvent }[] = [];
      let dropped = 0;
      for (const event of events) {
        const parsed = parse(event);
        if (!parsed.ok) throw new AppError('INTERNAL', `built an invalid canonical event: ${parsed.detail}`);
        if (suppressed(parsed.storable)) dropped += 1;
        else valid.push(parsed);
      }
      if (dropped > 0) suppression?.dropped(dropped);
      if (valid.length === 0) return;
      // The store's own error goes to the caller, who answers a request with it.
      await deps.store.insertEvents(foldCopies(valid).firsts.map((item) => item.storable));
    },
  };
}
