import type { Kafka, Producer, RecordMetadata } from 'kafkajs';
import { AppError } from '../errors/app-error.js';
import { partitionLedger, sendCompletely, type PartitionLedger } from '../kafka/complete-send.js';
import { compressionType, type CompressionName } from '../kafka/compression-codecs.js';
import { toKafkaError } from '../kafka/kafka-errors.js';
import { limitOf, recordBytes, sendBudget, type MessageLimits } from '../kafka/message-bytes.js';
import type { Logger } from '../observability/logger.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { createGroupCommit, type GroupCommit } from '../concurrency/group-commit.js';
import { REQUEST_ID_MESSAGE_HEADER } from './command-context.js';
import type { CommandPublisher, PublishAck, PublishRequest } from './command-publisher.js';

export interface KafkaCommandPublisherOptions {
  readonly kafka: Kafka;
  readonly metrics: GatewayMetrics;
  /** How many producers (lanes) send side by side (KAFKA_PRODUCERS). */
  readonly producers: number;
  /** Longest a request waits for Kafka before it is answered 503. */
  readonly timeoutMs: number;
  /** max.message.bytes of the command topics, read at start (src/kafka/message-bytes.ts). */
  readonly messageLimits: MessageLimits;
  /** The codec of every record batch sent (KAFKA_COMPRESSION). */
  readonly compression: CompressionName;
  readonly logger: Logger;
}

/** A command as it goes out: encoded once, when it is accepted, and weighed. */
interface OutgoingMessage {
  readonly key: string;
  readonly value: string;
  readonly headers: Record<string, string>;
}

interface Pending {
  readonly request: PublishRequest;
  readonly message: OutgoingMessage;
  readonly bytes: number;
  /** Set when the caller stopped waiting; such a request is not sent. */
  expired: boolean;
  /** Set once Kafka acknowledged it: where it was written. */
  ack?: PublishAck;
}

const MAX_REQUESTS_PER_SEND = 1000;

/**
 * An idempotent producer must retry without limit: a bounded retry count could give up
 * on a batch the broker has already written and break the sequence it dedupes by
 * (kafkajs warns about exactly that). The request's own deadline bounds the answer
 * instead, and a send that fails anyway replaces the producer. The backoff is capped
 * at one second, so sends resume within a second of a broker's return.
 */
const PRODUCER_RETRY = { retries: Number.MAX_SAFE_INTEGER, initialRetryTime: 100, maxRetryTime: 1000 };

/**
 * Each request's partition and offset. A partition's messages are sent together, in the
 * order of the send, in the one try whose answer names the partition (sendCompletely sends
 * a left-out partition's messages again as a whole), so the n-th of them is at the
 * answer's baseOffset + n. The Idempotency-Key record keeps it (src/commands/command-handler.ts).
 */
function noteOffsets(live: readonly Pending[], sent: ReadonlyMap<Pending, OutgoingMessage>, answers: readonly RecordMetadata[], ledger: PartitionLedger): void {
  const base = new Map<string, bigint>();
  for (const a of answers) if (a.baseOffset !== undefined) base.set(`${a.topicName}/${a.partition}`, BigInt(a.baseOffset));
  const seen = new Map<string, bigint>();
  for (const p of live) {
    const partition = ledger.partitionOf(sent.get(p)!);
    if (partition === undefined) continue;
    const slot = `${p.request.command.topic}/${partition}`;
    const first = base.get(slot);
    const n = seen.get(slot) ?? 0n;
    seen.set(slot, n + 1n);
    p.ack = { partition, offset: first === undefined ? null : String(first + n) };
  }
}

/** One idempotent producer and the requests waiting for its next send. */
interface Lane {
  readonly sends: GroupCommit<Pending>;
  close(): Promise<void>;
}

function createLane(options: KafkaCommandPublisherOptions, logger: Logger, maxSendBytes: number): Lane {
  let producer: Promise<Producer> | undefined;
  // A 2xx needs every command of a send written; kafkajs alone can drop a partition on a leader change.
  const ledger = partitionLedger();

  function currentProducer(): Promise<Producer> {
    if (producer !== undefined) return producer;
    const attempt = (async () => {
      const p = options.kafka.producer({
        idempotent: true,
        maxInFlightRequests: 1,
        allowAutoTopicCreation: false,
        retry: PRODUCER_RETRY,
        createPartitioner: ledger.createPartitioner,
      });
      try {
        await p.connect();
      } catch (error) {
        await p.disconnect().catch(() => undefined);
        throw error;
      }
      return p;
    })();
    producer = attempt;
    // A failed connect is forgotten so the next send tries again (unless a newer attempt replaced it).
    attempt.catch(() => {
      if (producer === attempt) producer = undefined;
    });
    return attempt;
  }

  /** After a failed send the producer is replaced: a new producer id starts a clean sequence. */
  async function resetProducer(): Promise<void> {
    const old = producer;
    producer = undefined;
    if (old !== undefined) await old.then((p) => p.disconnect()).catch(() => undefined);
  }

  const sends = createGroupCommit<Pending>(
    async (pending) => {
      const live = pending.filter((p) => !p.expired);
      if (live.length === 0) return;
      const byTopic = new Map<string, OutgoingMessage[]>();
      const sent = new Map<Pending, OutgoingMessage>();
      for (const p of live) {
        const list = byTopic.get(p.request.command.topic) ?? [];
        // A message object of its own per try: the ledger notes partitions by object.
        const copy = { ...p.message };
        list.push(copy);
        sent.set(p, copy);
        byTopic.set(p.request.command.topic, list);
      }
      const topics = [...byTopic.keys()];
      const started = process.hrtime.bigint();
      try {
        const p = await currentProducer();
        const answers = await sendCompletely(p, ledger, { acks: -1, compression: compressionType(options.compression), topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) }, (missing) =>
          logger.warn({ missing }, 'kafkajs acknowledged a send without some of its partitions; sending those again'),
        );
        noteOffsets(live, sent, answers, ledger);
      } catch (error) {
        for (const topic of topics) options.metrics.produceErrors.inc({ topic });
        await resetProducer();
        throw error;
      }
      // Their callers were answered 503 while this send retried; the command is on its topic all the same.
      for (const p of live) if (p.expired && p.ack !== undefined) p.request.onLateAck?.(p.ack);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      for (const topic of topics) options.metrics.produceDuration.observe({ topic }, seconds);
    },
    // One send's bytes stay under every command topic's limit, so no partition's batch can
    // pass it: 60 large enrollments of one device go out in several sends, not one refused one.
    { maxItems: MAX_REQUESTS_PER_SEND, weigh: (p) => p.bytes, maxWeight: maxSendBytes },
  );

  return {
    sends,
    async close() {
      // Every request's answer is due within timeoutMs; past that, a send still retrying
      // against an absent broker is given up by disconnecting its producer.
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<void>((done) => (timer = setTimeout(done, options.timeoutMs)));
      await Promise.race([sends.drain().catch(() => undefined), deadline]);
      clearTimeout(timer);
      await resetProducer();
    },
  };
}

/** Same key, same lane: one device's (or fleet's) commands keep their order. */
function laneOf(key: string, lanes: number): number {
  let hash = 0;
  for (let i = 0; i < key.length; i += 1) hash = (Math.imul(hash, 31) + key.charCodeAt(i)) | 0;
  return Math.abs(hash) % lanes;
}

/**
 * Publishes each command to its command topic, and nothing else: its canonical event is
 * derived from it by the ingest consumer, so no Kafka transaction is needed and none can
 * be left hanging by a crash (docs/decisions/kafka-atomicity.md). A lane is one
 * idempotent producer (acks from all in-sync replicas, broker-side dedup of its own
 * retries); a request goes to the lane of its key, and requests waiting for the same lane
 * share its next send (group commit), which keeps one key's commands in the order they
 * were accepted. A request resolves once Kafka acknowledged its command and rejects with
 * a 503 when that has not happened within `timeoutMs`.
 */
export function createKafkaCommandPublisher(options: KafkaCommandPublisherOptions): CommandPublisher {
  const logger = options.logger.child({ module: 'command-publisher' });
  const budgetOf = (topic: string) => sendBudget(limitOf(options.messageLimits, topic));
  const maxSendBytes = options.messageLimits.size === 0 ? budgetOf('') : Math.min(...[...options.messageLimits.keys()].map(budgetOf));
  const lanes = Array.from({ length: options.producers }, () => createLane(options, logger, maxSendBytes));

  return {
    async publish(request) {
      const { command } = request;
      const message: OutgoingMessage = { key: command.key, value: JSON.stringify(command.value), headers: { ...command.headers } };
      const bytes = recordBytes(message);
      if (bytes > budgetOf(command.topic)) {
        // No batch could carry it; sent, it would only fail, and fail its neighbours with it.
        throw new AppError('BODY_TOO_LARGE', 'Command too large for its topic', {
          detail: `The command this request makes is ${bytes} bytes, more than its Kafka topic accepts (${budgetOf(command.topic)} bytes); send a smaller body.`,
        });
      }
      const pending: Pending = { request, message, bytes, expired: false };
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          pending.expired = true;
          reject(
            new AppError('UPSTREAM_UNAVAILABLE', 'Kafka did not acknowledge in time', {
              detail: 'The message broker did not acknowledge the command in time; retry shortly.',
            }),
          );
        }, options.timeoutMs);
      });
      try {
        const lane = lanes[laneOf(request.command.key, lanes.length)]!;
        await Promise.race([lane.sends.write([pending]), timeout]);
        return pending.ack ?? { partition: null, offset: null };
      } catch (error) {
        const appError = toKafkaError(error, 'publish');
        logger.warn(
          { err: error, commandId: request.command.commandId, requestId: request.command.headers[REQUEST_ID_MESSAGE_HEADER] },
          'command not acknowledged',
        );
        throw appError;
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      await Promise.all(lanes.map((lane) => lane.close()));
    },
  };
}
