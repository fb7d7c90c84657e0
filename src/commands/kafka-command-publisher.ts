import type { Kafka, Producer } from 'kafkajs';
import { AppError } from '../errors.js';
import { eventMessage } from '../kafka/event-message.js';
import { toKafkaError } from '../kafka/kafka-errors.js';
import type { Logger } from '../logger.js';
import { createGroupCommit } from '../store/group-commit.js';
import type { CommandPublisher, PublishRequest } from './command-publisher.js';

export interface KafkaCommandPublisherOptions {
  readonly kafka: Kafka;
  /** Where the commands' canonical events go (the first of EVENTS_TOPICS). */
  readonly eventsTopic: string;
  /** Unique per gateway process; a restarted process reusing it fences its predecessor. */
  readonly transactionalId: string;
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

/**
 * Publishes each command and its canonical event in one Kafka transaction, so a consumer
 * reading committed data sees both or neither. Concurrent requests share a transaction
 * (group commit): a producer runs one transaction at a time, and this keeps throughput
 * from being bounded by commit round trips. A request resolves only after the commit,
 * which Kafka acknowledges from all in-sync replicas (the idempotent producer sends with
 * acks=-1), and rejects with a 503 when that has not happened within `timeoutMs`.
 */
export function createKafkaCommandPublisher(options: KafkaCommandPublisherOptions): CommandPublisher {
  const logger = options.logger.child({ module: 'command-publisher' });
  let producer: Promise<Producer> | undefined;

  function currentProducer(): Promise<Producer> {
    if (producer !== undefined) return producer;
    const attempt = (async () => {
      const p = options.kafka.producer({
        transactionalId: options.transactionalId,
        idempotent: true,
        maxInFlightRequests: 1,
        transactionTimeout: TRANSACTION_TIMEOUT_MS,
        retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
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
      const transaction = await p.transaction();
      try {
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
        await transaction.abort().catch(() => undefined);
        await resetProducer();
        throw error;
      }
    },
    { maxItems: MAX_REQUESTS_PER_TRANSACTION },
  );

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
        await Promise.race([transactions.write([pending]), timeout]);
      } catch (error) {
        const appError = toKafkaError(error, 'publish');
        logger.warn({ err: error, commandId: request.command.commandId }, 'command not acknowledged');
        throw appError;
      } finally {
        clearTimeout(timer);
      }
    },
    async close() {
      await transactions.drain().catch(() => undefined);
      await resetProducer();
    },
  };
}
