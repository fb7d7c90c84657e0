import type { Admin, Kafka, Message, Producer, Transaction } from 'kafkajs';
import { partitionLedger, sendCompletely, type PartitionLedger } from '../kafka/complete-send.js';
import { compressionType, type CompressionName } from '../kafka/compression-codecs.js';
import { recordBytes, sendBudget } from '../kafka/message-bytes.js';
import type { Logger } from '../observability/logger.js';
import { deadLetterMessage, deadLetterReference } from './dead-letter.js';
import type { RejectedMessage } from './event-ingestor.js';

export interface DeadLetterWriterOptions {
  readonly kafka: Kafka;
  readonly topic: string;
  /** The dead-letter topic's max.message.bytes, read at start. */
  readonly maxMessageBytes: number;
  /** The codec of every record batch sent (KAFKA_COMPRESSION). */
  readonly compression: CompressionName;
  /** The ingest consumer's group: the transactions commit its offsets. */
  readonly groupId: string;
  /** What each input partition's transactional id starts with (INGEST_TRANSACTIONAL_ID_PREFIX). */
  readonly transactionalIdPrefix: string;
  readonly logger: Logger;
}

/** Where a batch came from, and the offset its commit moves the group to. */
export interface BatchSource {
  readonly topic: string;
  readonly partition: number;
  /** The offset after the batch's last record. */
  readonly next: string;
}

export interface DeadLetterWriter {
  start(): Promise<void>;
  /**
   * Sends a batch's dead letters and commits the group's offset of its partition past the
   * batch in one Kafka transaction, acknowledged by all in-sync replicas: a reader with
   * isolation level read_committed sees the letters once the offset is committed, and never
   * sees them when it is not (docs/decisions/dead-letters-once.md).
   */
  writeCommitting(rejected: readonly RejectedMessage[], source: BatchSource): Promise<void>;
  /**
   * Takes the transactional ids of newly assigned partitions, each on a new producer: the
   * broker then fences their last owners' producers and finishes what those left open (a
   * transaction being committed is waited for, an open one aborted), so the group's offsets
   * read after this include every dead-letter transaction that will ever commit for them.
   */
  claim(partitions: readonly { readonly topic: string; readonly partition: number }[]): Promise<void>;
  stop(): Promise<void>;
}

/** The transactional id of one input partition's dead letters: the partition's next owner takes the same one, which fences the last. */
export function transactionalId(prefix: string, topic: string, partition: number): string {
  return `${prefix}${topic}.${partition}`;
}

/** The prefix when INGEST_TRANSACTIONAL_ID_PREFIX is unset: named for the group, whose ACLs an operator grants alongside. */
export function defaultTransactionalIdPrefix(groupId: string): string {
  return `${groupId}.dead-letters.`;
}

/**
 * The broker's answer when another producer took the transactional id since this one
 * initialised it: the partition's new owner. Retrying would take the id back from it.
 */
export class DeadLettersFencedError extends Error {
  override readonly name = 'DeadLettersFencedError';
  constructor(readonly transactionalId: string, cause: unknown) {
    super(`transactional id ${transactionalId} taken by another producer: the partition has a new owner`, { cause });
  }
}

const FENCED_TYPES = new Set(['INVALID_PRODUCER_EPOCH', 'PRODUCER_FENCED']);

/** Whether kafkajs failed because a newer producer of the same transactional id fenced this one. */
export function isProducerFenced(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const type = (e as { type?: unknown }).type;
    if (typeof type === 'string' && FENCED_TYPES.has(type)) return true;
  }
  return false;
}

/** What one transaction needs of a kafkajs producer. */
export type TransactionalProducer = Pick<Producer, 'transaction'>;

/**
 * One transaction: every send of letters, then the batch's offset, then the commit. Any
 * failure aborts it (when kafkajs still can), so nothing of it is visible to read_committed
 * readers and the offset stays where it was: the caller may run it again whole.
 */
export async function sendLettersAndOffset(
  producer: TransactionalProducer,
  ledger: PartitionLedger,
  sends: readonly Message[][],
  offset: BatchSource & { readonly groupId: string; readonly topicOut: string; readonly compression: CompressionName },
  onGap?: (missing: readonly { topic: string; partition: number; messages: number }[]) => void,
): Promise<void> {
  const transaction: Transaction = await producer.transaction();
  try {
    for (const messages of sends) {
      await sendCompletely(transaction, ledger, { acks: -1, compression: compressionType(offset.compression), topicMessages: [{ topic: offset.topicOut, messages }] }, onGap);
    }
    await transaction.sendOffsets({ consumerGroupId: offset.groupId, topics: [{ topic: offset.topic, partitions: [{ partition: offset.partition, offset: offset.next }] }] });
    await transaction.commit();
  } catch (error) {
    if (transaction.isActive()) await transaction.abort().catch(() => undefined);
    throw error;
  }
}

/**
 * Cuts the letters into sends of at most `budget` bytes each, in order. A single letter
 * over the budget becomes a reference to its source message, so that it can never be
 * refused for its size, nor take a send of others down with it.
 */
export function deadLetterSends(rejected: readonly RejectedMessage[], budget: number): { readonly sends: Message[][]; readonly references: number } {
  const sends: Message[][] = [];
  let current: Message[] = [];
  let bytes = 0;
  let references = 0;
  for (const r of rejected) {
    let letter = deadLetterMessage(r);
    let size = recordBytes(letter);
    if (size > budget) {
      letter = deadLetterReference(r);
      size = recordBytes(letter);
      references += 1;
    }
    if (current.length > 0 && bytes + size > budget) {
      sends.push(current);
      current = [];
      bytes = 0;
    }
    current.push(letter);
    bytes += size;
  }
  if (current.length > 0) sends.push(current);
  return { sends, references };
}

/**
 * Writes dead letters in transactions, one transactional producer per input partition,
 * each send under the topic's byte limit. A send that kafkajs acknowledges without some of
 * its partitions is completed (src/kafka/complete-send.ts). A producer is made at the first
 * dead letter of its partition and kept until stop.
 *
 * A transaction whose outcome is unknown (its commit failed without an answer) may have
 * committed: before it is run again, a new producer takes the id (which finishes whatever
 * the last one left open) and the group's offset is read; if it has reached the batch's
 * end, the letters are in and nothing is sent again.
 */
export function createDeadLetterWriter(options: DeadLetterWriterOptions): DeadLetterWriter {
  const logger = options.logger.child({ module: 'dead-letters' });
  const budget = sendBudget(options.maxMessageBytes);
  const admin: Admin = options.kafka.admin();
  const producers = new Map<string, { readonly producer: Producer; readonly ledger: PartitionLedger }>();
  /** Transactional ids whose last transaction failed: the next attempt starts on a new producer and checks the offset first. */
  const uncertain = new Set<string>();

  async function producerFor(id: string): Promise<{ readonly producer: Producer; readonly ledger: PartitionLedger }> {
    const known = producers.get(id);
    if (known !== undefined) return known;
    const ledger = partitionLedger();
    const producer = options.kafka.producer({ transactionalId: id, idempotent: true, maxInFlightRequests: 1, createPartitioner: ledger.createPartitioner });
    await producer.connect();
    const made = { producer, ledger };
    producers.set(id, made);
    return made;
  }

  async function drop(id: string): Promise<void> {
    const known = producers.get(id);
    producers.delete(id);
    await known?.producer.disconnect().catch(() => undefined);
  }

  /** The group's committed offset of the partition, as a number of the same kind as `next`. */
  async function committed(source: BatchSource): Promise<bigint> {
    const [offsets] = await admin.fetchOffsets({ groupId: options.groupId, topics: [source.topic] });
    const found = offsets?.partitions.find((p) => p.partition === source.partition);
    return BigInt(found?.offset ?? '-1');
  }

  /** A new producer for the id, initialised: an empty transaction's start makes kafkajs take the id now; it commits nothing. */
  async function takeOver(id: string): Promise<Producer> {
    await drop(id);
    const { producer } = await producerFor(id);
    const probe = await producer.transaction();
    await probe.abort();
    return producer;
  }

  return {
    start: () => admin.connect(),
    async claim(partitions) {
      await Promise.all(partitions.map(({ topic, partition }) => takeOver(transactionalId(options.transactionalIdPrefix, topic, partition))));
    },
    async writeCommitting(rejected, source) {
      const id = transactionalId(options.transactionalIdPrefix, source.topic, source.partition);
      const { sends, references } = deadLetterSends(rejected, budget);
      if (references > 0) logger.warn({ references, maxMessageBytes: options.maxMessageBytes }, 'dead letters too large for their topic sent as references to their source');
      if (uncertain.has(id)) {
        await takeOver(id);
        uncertain.delete(id);
        if ((await committed(source)) >= BigInt(source.next)) {
          logger.info({ topic: source.topic, partition: source.partition }, 'dead letters of a batch were committed by an attempt whose answer was lost; not sent again');
          return;
        }
      }
      const { producer, ledger } = await producerFor(id);
      try {
        await sendLettersAndOffset(producer, ledger, sends, { ...source, groupId: options.groupId, topicOut: options.topic, compression: options.compression }, (missing) =>
          logger.warn({ missing }, 'kafkajs acknowledged a send without some of its partitions; sending those again'),
        );
      } catch (error) {
        if (isProducerFenced(error)) {
          await drop(id);
          throw new DeadLettersFencedError(id, error);
        }
        uncertain.add(id);
        throw error;
      }
    },
    async stop() {
      await Promise.all([...producers.keys()].map(drop));
      await admin.disconnect();
    },
  };
}
