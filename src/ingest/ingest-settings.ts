import { isTopicName, topicName } from '../kafka/kafka-settings.js';
import { ConfigError } from '../settings/config-error.js';
import { integer, list, optional, type Env } from '../settings/env.js';

/** How the ingest consumer batches, bounds and fetches (INGEST_*). */
export interface IngestConfig {
  readonly batchSize: number;
  readonly batchWaitMs: number;
  /** Most bytes of message values in one insert (INGEST_BATCH_BYTES): a backlog of large events is split by bytes as well as by count. */
  readonly batchBytes: number;
  /** Events fetched and not yet stored, at most (INGEST_MAX_IN_FLIGHT_EVENTS); fetching waits past it. */
  readonly maxInFlightEvents: number;
  /** Bytes of message values fetched and not yet stored, at most (INGEST_MAX_IN_FLIGHT_BYTES); fetching waits past it. */
  readonly maxInFlightBytes: number;
  /**
   * Bytes the fetched and not yet committed messages may cost the process's memory, their
   * values and what each message holds beside its value (INGEST_MAX_BUFFERED_BYTES); fetching
   * waits past it, and what one fetch asks for is derived from it.
   */
  readonly maxBufferedBytes: number;
  /** A partition with fetched events whose commit has not moved for this long is stalled: /metrics and /readyz say so (INGEST_STALL_MS). */
  readonly stallMs: number;
  /** Most bytes of one partition's records in one fetch, as the broker keeps them: compressed (INGEST_FETCH_PARTITION_BYTES). */
  readonly fetchPartitionBytes: number;
  /** How old the consumer's view of its topics' partitions may grow before it is asked for again: partitions added to a topic are read within about this long (INGEST_METADATA_MAX_AGE_MS). */
  readonly metadataMaxAgeMs: number;
  /**
   * What the transactional ids of the dead-letter sends start with; each input partition's id
   * is this followed by `<topic>.<partition>` (INGEST_TRANSACTIONAL_ID_PREFIX). Unset, it is
   * the consumer group's name followed by `.dead-letters.` (docs/decisions/dead-letters-once.md).
   */
  readonly transactionalIdPrefix?: string | undefined;
}

/** INGEST_MAX_BUFFERED_BYTES unless set (docs/decisions/ingest-memory-bound.md). */
export const DEFAULT_MAX_BUFFERED_BYTES = 256 * 1024 * 1024;
/** Below this a budget holds less than one fetch of the default size, and draining crawls. */
const MIN_BUFFERED_BYTES = 16 * 1024 * 1024;

/** Room left under the broker's limit on a transactional id for `<topic>.<partition>` (a topic name is at most 249 characters). */
const MAX_TRANSACTIONAL_ID_PREFIX = 200;

/** INGEST_*: batches, in-flight bounds, stall detection and fetch sizes of the ingest consumer. */
export function parseIngest(env: Env): IngestConfig {
  const batchSize = integer(env, 'INGEST_BATCH_SIZE', 50_000, 1, 1_000_000);
  // 32 MiB holds a full batch of telemetry (50,000 events of about 450 bytes is 22 MB), so
  // the count decides for it; a backlog of 86 KB events went into one body of 4.3 GB, past
  // what a Buffer can hold. Up to 1 GiB: a Buffer's and the server's own limits lie above.
  const batchBytes = integer(env, 'INGEST_BATCH_BYTES', 32 * 1024 * 1024, 64 * 1024, 1024 * 1024 * 1024);
  return {
    batchSize,
    batchBytes,
    batchWaitMs: integer(env, 'INGEST_BATCH_WAIT_MS', 200, 0, 60_000),
    // Four inserts' worth keeps the store busy while kafkajs fetches the next ones.
    maxInFlightEvents: integer(env, 'INGEST_MAX_IN_FLIGHT_EVENTS', 4 * batchSize, 1, 10_000_000),
    maxInFlightBytes: integer(env, 'INGEST_MAX_IN_FLIGHT_BYTES', 4 * batchBytes, 64 * 1024, 8 * 1024 * 1024 * 1024),
    // What a backlog may make the process hold: with a process's own 100 MB or so beside it,
    // a consumer draining a backlog stays under 512 MB of resident memory at the drain rate
    // of an unbounded one (docs/decisions/ingest-memory-bound.md, the backlog bench).
    maxBufferedBytes: integer(env, 'INGEST_MAX_BUFFERED_BYTES', DEFAULT_MAX_BUFFERED_BYTES, MIN_BUFFERED_BYTES, 8 * 1024 * 1024 * 1024),
    // Six times the store retry's longest backoff (10 s): a sick store shows within a minute, a slow insert does not.
    stallMs: integer(env, 'INGEST_STALL_MS', 60_000, 1000, 86_400_000),
    // Counted compressed, as the broker stores it: why 1 MiB, in src/ingest/kafka-ingest-consumer.ts (fetchBytes).
    fetchPartitionBytes: integer(env, 'INGEST_FETCH_PARTITION_BYTES', 1024 * 1024, 64 * 1024, 16 * 1024 * 1024),
    // kafkajs's default (and the Java client's) is 300 s: partitions added during a spike went
    // unread for five minutes. One metadata request each 10 s costs the broker next to nothing
    // (docs/decisions/topic-changes-and-gaps.md).
    metadataMaxAgeMs: integer(env, 'INGEST_METADATA_MAX_AGE_MS', 10_000, 1000, 300_000),
    transactionalIdPrefix: parseTransactionalIdPrefix(env),
  };
}

/** EVENTS_TOPICS: the topics of canonical events the ingest consumer reads (it reads the command topics too). */
export function parseEventTopics(env: Env): string[] {
  const events = list(env, 'EVENTS_TOPICS') ?? ['platform.events'];
  for (const name of events) {
    if (!isTopicName(name)) throw new ConfigError('EVENTS_TOPICS', `"${name}" is not a valid Kafka topic name`);
  }
  return events;
}

/** EVENTS_DLQ_TOPIC: where the ingest consumer writes what it cannot store. */
export function parseDeadLetterTopic(env: Env): string {
  return topicName(env, 'EVENTS_DLQ_TOPIC', 'platform.events.dlq');
}

/** INGEST_TRANSACTIONAL_ID_PREFIX: a name the ingest principal holds TransactionalId ACLs on, unset for the group's name. */
function parseTransactionalIdPrefix(env: Env): string | undefined {
  const prefix = optional(env, 'INGEST_TRANSACTIONAL_ID_PREFIX');
  if (prefix === undefined) return undefined;
  if (prefix.length > MAX_TRANSACTIONAL_ID_PREFIX || /\s/.test(prefix)) {
    throw new ConfigError('INGEST_TRANSACTIONAL_ID_PREFIX', `must be at most ${MAX_TRANSACTIONAL_ID_PREFIX} characters without spaces`);
  }
  return prefix;
}
