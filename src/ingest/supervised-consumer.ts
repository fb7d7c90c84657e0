import type { Consumer, ConsumerRunConfig, Kafka } from 'kafkajs';
import type { Logger } from '../observability/logger.js';

export interface SupervisedConsumerOptions {
  readonly kafka: Kafka;
  readonly groupId: string;
  readonly topics: readonly string[];
  /** Silence after which the group hands this member's partitions to another; heartbeats go every third of it. */
  readonly sessionTimeoutMs: number;
  readonly fetch: { readonly minBytes: number; readonly maxBytesPerPartition: number; readonly maxBytes: number };
  readonly run: Pick<ConsumerRunConfig, 'eachBatch' | 'partitionsConsumedConcurrently'>;
  /**
   * A rebalance began (`assignment` undefined) or this member joined a generation with
   * these partitions, by topic. Batches handed over before it are no longer this member's to commit.
   */
  readonly onRebalance: (assignment: Readonly<Record<string, readonly number[]>> | undefined) => void;
  /**
   * kafkajs fetched a batch of only transaction markers or aborted records and moved past
   * it without calling the handler: the partition may be committed up to `lastOffset` + 1.
   */
  readonly onFilteredBatch: (topic: string, partition: number, lastOffset: string) => void;
  readonly logger: Logger;
}

export interface SupervisedConsumer {
  start(): Promise<void>;
  /**
   * Leaves the group and joins again as a new member, for a partition whose commits can no
   * longer go through: the group then delivers every partition from its last commit.
   */
  rejoin(): void;
  /** Stops fetching every topic, for a shutdown that still commits what it has. */
  pauseAll(): void;
  stop(): Promise<void>;
}

// A consumer kafkajs gave up on is replaced after this pause, and again after it if the new one cannot start.
const REPLACE_AFTER_MS = 1000;

/** kafkajs's own test for an error that means "the group is rebalancing" (its src/errors.js isRebalancing). */
export function isRebalancing(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return type === 'REBALANCE_IN_PROGRESS' || type === 'NOT_COORDINATOR_FOR_GROUP' || type === 'ILLEGAL_GENERATION';
}

/**
 * One kafkajs consumer in the group, kept alive: kafkajs restarts a consumer only after an
 * error it deems retriable, and after any other (seen once after a broker outage) it
 * disconnects for good, which would stop ingestion in silence. Such a consumer is replaced
 * by a new one in the same group. Every rebalance is reported through `onRebalance`.
 */
export function createSupervisedConsumer(options: SupervisedConsumerOptions): SupervisedConsumer {
  const { logger } = options;
  let stopping = false;
  let replacement: NodeJS.Timeout | undefined;

  const newConsumer = (): Consumer => {
    const fresh = options.kafka.consumer({
      groupId: options.groupId,
      readUncommitted: false,
      sessionTimeout: options.sessionTimeoutMs,
      heartbeatInterval: Math.floor(options.sessionTimeoutMs / 3),
      maxWaitTimeInMs: 250,
      minBytes: options.fetch.minBytes,
      maxBytesPerPartition: options.fetch.maxBytesPerPartition,
      maxBytes: options.fetch.maxBytes,
      // After a crash (the broker gone, say) kafkajs restarts the consumer on a timer that
      // it arms after asking this; a stop() that came in between would clear no timer and
      // leave the restart reconnecting forever. So a stopping consumer never restarts.
      retry: { restartOnFailure: async () => !stopping },
    });
    fresh.on(fresh.events.CRASH, ({ payload }) => {
      if (payload.restart || stopping) return;
      logger.error({ err: payload.error }, 'ingest consumer stopped on an error kafkajs does not restart after; starting a new one');
      scheduleReplacement();
    });
    fresh.on(fresh.events.REBALANCING, () => options.onRebalance(undefined));
    // Every JoinGroup answered starts a generation, and kafkajs takes it up (a new offset
    // manager, which commits with it) only after the SyncGroup that follows: fencing here
    // comes before any commit could go out under the new generation for an older batch.
    fresh.on(fresh.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.batchSize === 0) options.onFilteredBatch(payload.topic, payload.partition, payload.lastOffset);
    });
    fresh.on(fresh.events.REQUEST, ({ payload }) => {
      if (payload.apiName === 'JoinGroup') options.onRebalance(undefined);
    });
    // After a join kafkajs fetches each partition again from its committed offset.
    fresh.on(fresh.events.GROUP_JOIN, ({ payload }) => options.onRebalance(payload.memberAssignment));
    return fresh;
  };
  let consumer: Consumer = newConsumer();

  async function run(current: Consumer): Promise<void> {
    await current.connect();
    await current.subscribe({ topics: [...options.topics], fromBeginning: true });
    await current.run({ autoCommit: false, eachBatchAutoResolve: false, ...options.run });
  }

  function scheduleReplacement(): void {
    if (stopping || replacement !== undefined) return;
    replacement = setTimeout(() => {
      replacement = undefined;
      if (stopping) return;
      // The replaced member's batches are fenced off like a rebalance's.
      options.onRebalance(undefined);
      consumer = newConsumer();
      run(consumer).catch((error: unknown) => {
        logger.error({ err: error }, 'a new ingest consumer did not start; trying again');
        scheduleReplacement();
      });
    }, REPLACE_AFTER_MS);
  }

  return {
    start: () => run(consumer),
    rejoin() {
      if (stopping || replacement !== undefined) return;
      options.onRebalance(undefined);
      const leaving = consumer;
      // The new member is started once the old one has left, so the two never hold the same partitions.
      void leaving
        .disconnect()
        .catch((error: unknown) => logger.warn({ err: error }, 'the ingest consumer did not leave the group cleanly'))
        .then(scheduleReplacement);
    },
    pauseAll() {
      stopping = true;
      clearTimeout(replacement);
      try {
        consumer.pause(options.topics.map((topic) => ({ topic })));
      } catch (error) {
        // A consumer that never joined its group (a broker down since the start, a crash
        // before the join) fetches nothing to pause; the stop goes on to disconnect it.
        logger.info({ err: error }, 'the ingest consumer had not joined its group; nothing to pause');
      }
    },
    async stop() {
      stopping = true;
      clearTimeout(replacement);
      await consumer.disconnect();
    },
  };
}
