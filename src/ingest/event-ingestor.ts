import { commandEvent } from '../commands/command-event.js';
import { AppError, type FieldErrors } from '../errors.js';
import type { CanonicalEvent } from '../generated/schema-types.js';
import type { SchemaRegistry } from '../schemas/schema-registry.js';
import type { EventStore } from '../store/event-store.js';
import { toStoreTimestamp, TimestampError } from '../store/timestamps.js';

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

export type RejectReason = 'empty-value' | 'invalid-json' | 'schema-violation' | 'timestamp-out-of-range';

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
   * messages are returned, never thrown, so one bad message cannot stop its partition.
   * Rejects only when the store fails, in which case nothing of the batch may be acknowledged.
   */
  ingestMessages(messages: readonly RawEventMessage[]): Promise<IngestResult>;
  /** Stores events the process built itself; an invalid one is a bug and throws. */
  ingestEvents(events: readonly CanonicalEvent[]): Promise<void>;
}

type Parsed = { ok: true; event: CanonicalEvent } | { ok: false; reason: RejectReason; detail: string };

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
      const valid: CanonicalEvent[] = [];
      const rejected: RejectedMessage[] = [];
      for (const message of messages) {
        const parsed = parseRaw(message);
        if (parsed.ok) valid.push(parsed.event);
        else rejected.push({ message, reason: parsed.reason, detail: parsed.detail });
      }
      if (valid.length > 0) await storeUnique(valid);
      return { stored: valid.length, rejected };
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
