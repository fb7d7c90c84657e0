import { commandEvent } from '../commands/command-event.js';
import { AppError, type FieldErrors } from '../errors/app-error.js';
import type { CanonicalEvent } from '../generated/schema-types.js';
import type { SchemaRegistry } from '../schemas/schema-registry.js';
import type { EventStore } from '../store/event-store.js';
import { describeRefusal, rowRefusal } from '../store/store-refusal.js';
import { toStoreTimestamp, TimestampError } from '../store/timestamps.js';
import { bisectInsert } from './bisect-insert.js';

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
export type MessageFormat = 'canonical-event' | 'enrollment-command' | 'edge-policy-command';

const COMMAND_SCHEMAS = {
  'enrollment-command': 'enrollment-command.schema.json',
  'edge-policy-command': 'edge-policy-command.schema.json',
} as const;

export interface RawEventMessage {
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
 * ingest_dead_lettered_total. All but the last are found by validation; `store-rejected`
 * is a valid event that the store itself refused on its own (src/ingest/bisect-insert.ts).
 */
export const REJECT_REASONS = ['empty-value', 'invalid-json', 'schema-violation', 'timestamp-out-of-range', 'store-rejected'] as const;
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

export interface EventIngestor {
  /**
   * Validates a batch of raw messages and stores the valid events in one write. Invalid
   * messages are returned, never thrown, so one bad message cannot stop its partition;
   * so are valid events the store refuses for their data, found by splitting the write
   * (`store-rejected`), while the rest of the batch is stored. Rejects only when the store
   * is sick, in which case nothing of the batch may be acknowledged.
   */
  ingestMessages(messages: readonly RawEventMessage[]): Promise<IngestResult>;
  /** Stores events the process built itself; an invalid one is a bug and throws. */
  ingestEvents(events: readonly CanonicalEvent[]): Promise<void>;
}

type Parsed = { ok: true; event: CanonicalEvent } | { ok: false; reason: RejectReason; detail: string };

/** An event to store once, and every message of the batch that carried it (a redelivery adds one). */
interface Carried {
  readonly event: CanonicalEvent;
  readonly messages: { readonly message: RawEventMessage; readonly index: number }[];
}

function describeFields(fields: FieldErrors): string {
  return Object.entries(fields)
    .map(([name, problem]) => `${name.replace(/^message\.?/, '') || '(root)'} ${problem}`)
    .join('; ');
}

export function createEventIngestor(deps: { store: EventStore; schemas: SchemaRegistry }): EventIngestor {
  const { schemas } = deps;

  function parse(value: unknown): Parsed {
    const checked = schemas.check('canonical-event.schema.json', value);
    if (!checked.ok) return { ok: false, reason: 'schema-violation', detail: describeFields(checked.fields) };
    try {
      toStoreTimestamp(checked.value.occurred_at);
    } catch (error) {
      if (error instanceof TimestampError) return { ok: false, reason: 'timestamp-out-of-range', detail: error.message };
      throw error;
    }
    return { ok: true, event: checked.value };
  }

  function parseRaw(message: RawEventMessage): Parsed {
    if (message.value === null || message.value.length === 0) {
      return { ok: false, reason: 'empty-value', detail: 'message has no value' };
    }
    let json: unknown;
    try {
      json = JSON.parse(message.value.toString());
    } catch {
      return { ok: false, reason: 'invalid-json', detail: 'message value is not JSON' };
    }
    const format = message.format ?? 'canonical-event';
    if (format === 'canonical-event') return parse(json);
    const command = schemas.check(COMMAND_SCHEMAS[format], json);
    if (!command.ok) return { ok: false, reason: 'schema-violation', detail: describeFields(command.fields) };
    return parse(commandEvent(command.value, message.headers?.['traceparent']?.toString()));
  }

  async function storeUnique(events: CanonicalEvent[]): Promise<void> {
    // Copies of one event inside a batch are written once; across batches the store folds them.
    const seen = new Set<string>();
    const unique = events.filter((e) => {
      const id = e.id.toLowerCase();
      if (seen.has(id)) return false;
      seen.add(id);
      return true;
    });
    await deps.store.insertEvents(unique);
  }

  return {
    async ingestMessages(messages) {
      // Copies of one event inside a batch are written once; across batches the store folds them.
      const carried = new Map<string, Carried>();
      const rejected: { readonly index: number; readonly rejection: RejectedMessage }[] = [];
      let valid = 0;
      messages.forEach((message, index) => {
        const parsed = parseRaw(message);
        if (!parsed.ok) {
          rejected.push({ index, rejection: { message, reason: parsed.reason, detail: parsed.detail } });
          return;
        }
        valid += 1;
        const id = parsed.event.id.toLowerCase();
        const known = carried.get(id);
        if (known === undefined) carried.set(id, { event: parsed.event, messages: [{ message, index }] });
        else known.messages.push({ message, index });
      });
      const { refused } = await bisectInsert([...carried.values()], {
        insert: (part) => deps.store.insertEvents(part.map((c) => c.event)),
        refusal: rowRefusal,
      });
      let refusedMessages = 0;
      for (const { item, refusal } of refused) {
        // Every copy goes with the event: none of them was stored, and each must be accounted for before its offset is committed.
        for (const { message, index } of item.messages) {
          rejected.push({ index, rejection: { message, reason: 'store-rejected', detail: describeRefusal(refusal) } });
          refusedMessages += 1;
        }
      }
      // Dead letters in the order the messages came, whichever step refused them.
      rejected.sort((a, b) => a.index - b.index);
      return { stored: valid - refusedMessages, rejected: rejected.map((r) => r.rejection) };
    },
    async ingestEvents(events) {
      const valid: CanonicalEvent[] = [];
      for (const event of events) {
        const parsed = parse(event);
        if (!parsed.ok) throw new AppError('INTERNAL', `built an invalid canonical event: ${parsed.detail}`);
        valid.push(parsed.event);
      }
      await storeUnique(valid);
    },
  };
}
