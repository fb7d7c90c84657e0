import type { Kafka, Producer, Transaction } from 'kafkajs';
import { AppError } from '../errors.js';
import { eventMessage } from '../kafka/event-message.js';
import { toKafkaError } from '../kafka/kafka-errors.js';
import type { Logger } from '../logger.js';
import { createGroupCommit, type GroupCommit } from '../store/group-commit.js';
import type { CommandPublisher, PublishRequest } from './command-publisher.js';

export interface KafkaCommandPublisherOptions {
  readonly kafka: Kafka;
  /** Where the commands' canonical events go (the first of EVENTS_TOPICS). */
  readonly eventsTopic: string;
  /** Prefix of the lanes' transactional ids; unique per gateway process. */
  readonly transactionalId: string;
  /** How many transactional producers (lanes) run transactions side by side. */
  readonly producers: number;
  /** Longest a request waits for Kafka before it is answered 503. */
  readonly timeoutMs: number;
  readonly logger: Logger;
}

interface Pending {
  readonly request: PublishRequest;
  /** Set when the caller stopped waiting; such a request is not sent. */
  expired: boolean;
}

// An open transaction of a crashed gateway holds back read_committed consumers until
// the broker aborts it; keep that bound short.
const TRANSACTION_TIMEOUT_MS = 15_000;
const MAX_REQUESTS_PER_TRANSACTION = 1000;

/** One transactional producer and the requests waiting for its next transaction. */
interface Lane {
  readonly transactions: GroupCommit<Pending>;
  close(): Promise<void>;
}

/**
 * The producer's retry backoff also paces the retries of CONCURRENT_TRANSACTIONS, which
 * the broker answers to the first send after each commit until that commit's markers are
 * written. At kafkajs's 100 ms default one producer managed 10 transactions/s on this
 * machine; at 10 ms, 50 (docs/decisions/kafka-atomicity.md).
 */
const PRODUCER_RETRY = { retries: 5, initialRetryTime: 10, maxRetryTime: 1000 };

function createLane(options: KafkaCommandPublisherOptions, transactionalId: string): Lane {
  let producer: Promise<Producer> | undefined;

  function currentProducer(): Promise<Producer> {
    if (producer !== undefined) return producer;
    const attempt = (async () => {
      const p = options.kafka.producer({
        transactionalId,
        idempotent: true,
        maxInFlightRequests: 1,
        transactionTimeout: TRANSACTION_TIMEOUT_MS,
        retry: PRODUCER_RETRY,
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
    // A failed connect is forgotten so the next flush tries again (unless a newer attempt replaced it).
    attempt.catch(() => {
      if (producer === attempt) producer = undefined;
    });
    return attempt;
  }

  /** After any failure the producer is replaced; the new one's initTransactions aborts what the old one left open. */
  async function resetProducer(): Promise<void> {
    const old = producer;
    producer = undefined;
    if (old !== undefined) await old.then((p) => p.disconnect()).catch(() => undefined);
  }

  const transactions = createGroupCommit<Pending>(
    async (pending) => {
      const live = pending.filter((p) => !p.expired).map((p) => p.request);
      if (live.length === 0) return;
      const p = await currentProducer();
      let transaction: Transaction | undefined;
      try {
        transaction = await p.transaction();
        const byTopic = new Map<string, { key: string; value: string; headers: Record<string, string> }[]>();
        for (const { command } of live) {
          const list = byTopic.get(command.topic) ?? [];
          list.push({ key: command.key, value: JSON.stringify(command.value), headers: { ...command.headers } });
          byTopic.set(command.topic, list);
        }
        await transaction.sendBatch({
          acks: -1,
          topicMessages: [
            ...[...byTopic].map(([topic, messages]) => ({ topic, messages })),
            { topic: options.eventsTopic, messages: live.map((r) => eventMessage(r.event)) },
          ],
        });
        await transaction.commit();
      } catch (error) {
        await transaction?.abort().catch(() => undefined);
        await resetProducer();
        throw error;
      }
    },
    { maxItems: MAX_REQUESTS_PER_TRANSACTION },
  );

  return {
    transactions,
    async close() {
      await transactions.drain().catch(() => undefined);
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
 * Publishes each command and its canonical event in one Kafka transaction, so a consumer
 * reading committed data sees both or neither. A producer runs one transaction at a time,
 * so there are `producers` lanes, each a transactional producer; a request goes to the
 * lane of its key, and requests waiting for the same lane share its next transaction
 * (group commit). A request resolves only after the commit, which all in-sync replicas
 * acknowledged (the idempotent producer sends with acks=-1), and rejects with a 503 when
 * that has not happened within `timeoutMs`.
 */
export function createKafkaCommandPublisher(options: KafkaCommandPublisherOptions): CommandPublisher {
  const logger = options.logger.child({ module: 'command-publisher' });
  const lanes = Array.from({ length: options.producers }, (_, i) => createLane(options, `${options.transactionalId}-${i}`));

  return {
    async publish(request) {
      const pending: Pending = { request, expired: false };
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
        await Promise.race([lane.transactions.write([pending]), timeout]);
      } catch (error) {
        const appError = toKafkaError(error, 'publish');
        logger.warn({ err: error, commandId: request.command.commandId }, 'command not acknowledged');
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
