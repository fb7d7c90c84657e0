import kafkajs, { type Admin, type Message } from 'kafkajs';
import type { Logger } from '../observability/logger.js';

// kafkajs is CommonJS, and Node's ESM loader finds no named export for this enum.
const { ConfigResourceTypes } = kafkajs;

/**
 * A broker refuses a produce whose record batch for one partition is larger than the
 * topic's `max.message.bytes` (MESSAGE_TOO_LARGE), and refuses it whole: every message
 * that shared the batch fails with the one that was too large. So every send the product
 * makes is cut to stay under that limit (src/concurrency/group-commit.ts `maxWeight`), and
 * a single message that cannot fit is never sent as it is.
 */

/** Kafka's own default for `max.message.bytes` (and the broker's `message.max.bytes`). */
export const KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

/**
 * Room kept in a record batch for what is not the records' own bytes: the batch header
 * (61 bytes in format v2) and the log entry's offset and size (12), with margin.
 */
const BATCH_OVERHEAD_BYTES = 256;

/**
 * A record's fixed cost in format v2, at most: its length, attributes, timestamp and
 * offset deltas, key and value lengths and header count, each a varint of up to 5 or 10
 * bytes. Each header adds its two lengths.
 */
const RECORD_OVERHEAD_BYTES = 41;
const HEADER_OVERHEAD_BYTES = 10;

const byteLength = (value: Buffer | string | null | undefined): number =>
  value === null || value === undefined ? 0 : typeof value === 'string' ? Buffer.byteLength(value) : value.length;

/** An upper bound of the bytes a message takes in an uncompressed record batch. */
export function recordBytes(message: Pick<Message, 'key' | 'value' | 'headers'>): number {
  let bytes = RECORD_OVERHEAD_BYTES + byteLength(message.key) + byteLength(message.value);
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    const values = Array.isArray(value) ? value : [value];
    for (const v of values) bytes += HEADER_OVERHEAD_BYTES + Buffer.byteLength(name) + byteLength(v);
  }
  return bytes;
}

/** The record bytes one send may carry to a topic whose limit is `maxMessageBytes`. */
export function sendBudget(maxMessageBytes: number): number {
  return Math.max(1, maxMessageBytes - BATCH_OVERHEAD_BYTES);
}

/** `max.message.bytes` of each topic the process reads or writes: what one partition's batch may hold. */
export type MessageLimits = ReadonlyMap<string, number>;

/** The limit of `topic`, Kafka's default where it was not read. */
export function limitOf(limits: MessageLimits, topic: string): number {
  return limits.get(topic) ?? KAFKA_DEFAULT_MAX_MESSAGE_BYTES;
}

/**
 * The bytes a fetch asks of each partition: `wanted`, but never less than the largest
 * record batch the topics accept. The broker hands a batch larger than the bound whole
 * only to the first partition of a fetch and cuts it for the others, which kafkajs drops:
 * such a partition would move on only in the fetches that happen to list it first.
 */
export function fetchPartitionBytes(wanted: number, limits: MessageLimits, topics: readonly string[]): number {
  return Math.max(wanted, ...topics.map((topic) => limitOf(limits, topic)));
}

const positive = (value: string | undefined): number | undefined => (value !== undefined && /^\d+$/.test(value) && Number(value) > 0 ? Number(value) : undefined);

/**
 * Reads `max.message.bytes` of the topics (a topic without an override reports the
 * broker's `message.max.bytes`). Where the brokers do not say (no DescribeConfigs ACL, an
 * older broker), Kafka's default stands, logged at `refusal`: for a topic written, a
 * warning, since a send cut for the default is too large where the operator lowered the
 * limit. One refused topic fails the whole request, so topics read and topics written are
 * asked apart.
 */
export async function readMessageLimits(admin: Admin, topics: readonly string[], logger: Logger, refusal: 'warn' | 'info' = 'warn'): Promise<MessageLimits> {
  const names = [...new Set(topics)];
  const limits = new Map<string, number>();
  try {
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: names.map((name) => ({ type: ConfigResourceTypes.TOPIC, name, configNames: ['max.message.bytes'] })),
    });
    for (const resource of resources) {
      const value = positive(resource.configEntries.find((entry) => entry.configName === 'max.message.bytes')?.configValue);
      if (value !== undefined) limits.set(resource.resourceName, value);
    }
  } catch (error) {
    logger[refusal]({ err: error, topics: names, assumed: KAFKA_DEFAULT_MAX_MESSAGE_BYTES }, "could not read the topics' max.message.bytes; assuming Kafka's default");
  }
  for (const name of names) if (!limits.has(name)) limits.set(name, KAFKA_DEFAULT_MAX_MESSAGE_BYTES);
  logger.info({ maxMessageBytes: Object.fromEntries(limits) }, 'largest record batch each topic accepts');
  return limits;
}
