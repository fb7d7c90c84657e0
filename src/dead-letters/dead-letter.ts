import type { IHeaders, KafkaMessage } from 'kafkajs';

/** Where a dead letter's message was first read. */
export interface SourcePosition {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

/**
 * A record of the dead-letter topic read back: its provenance headers (written by
 * src/ingest/dead-letter.ts) made typed, and what the tool needs to select it.
 */
export interface DeadLetter {
  readonly message: KafkaMessage;
  /** `dlq-reason`; `unknown` when a record carries none (written by someone else). */
  readonly reason: string;
  readonly source: SourcePosition | undefined;
  /** A reference to a message too large to be copied whole: its value is only a prefix. */
  readonly truncated: boolean;
  /** How many times it was replayed already (`dlq-replay-count`, 0 when absent or unreadable). */
  readonly replayCount: number;
  /** When it was dead-lettered: the record's timestamp, in milliseconds. */
  readonly timestampMs: number;
}

export const REASON_HEADER = 'dlq-reason';
export const REPLAY_COUNT_HEADER = 'dlq-replay-count';
/** Every header the dead-letter writer adds starts with this; a replay removes them. */
export const PROVENANCE_PREFIX = 'dlq-';

/** A header's value as text: the first of a repeated header, undefined when absent or null. */
export function headerText(headers: IHeaders | undefined, name: string): string | undefined {
  const raw = headers?.[name];
  const first = Array.isArray(raw) ? raw[0] : raw;
  return first === undefined || first === null ? undefined : first.toString();
}

function sourceOf(headers: IHeaders | undefined): SourcePosition | undefined {
  const topic = headerText(headers, 'dlq-source-topic');
  const partition = Number(headerText(headers, 'dlq-source-partition'));
  const offset = headerText(headers, 'dlq-source-offset');
  if (topic === undefined || !Number.isInteger(partition) || offset === undefined || !/^\d+$/.test(offset)) return undefined;
  return { topic, partition, offset: BigInt(offset) };
}

export function readDeadLetter(message: KafkaMessage): DeadLetter {
  const count = Number(headerText(message.headers, REPLAY_COUNT_HEADER) ?? '0');
  return {
    message,
    reason: headerText(message.headers, REASON_HEADER) ?? 'unknown',
    source: sourceOf(message.headers),
    truncated: headerText(message.headers, 'dlq-truncated') === 'true',
    replayCount: Number.isInteger(count) && count > 0 ? count : 0,
    timestampMs: Number(message.timestamp),
  };
}
