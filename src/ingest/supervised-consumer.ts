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
   * `firstOffset` is the batch's first record, marker or aborted, at or past its fetch offset.
   */
  readonly onFilteredBatch: (topic: string, partition: number, firstOffset: string, lastOffset: string) => void;
  /**
   * Runs after each join of this member, once `onRebalance` has had the assignment: no
   * partition of it is fetched until this settles. It bounds its own waits, since fetching
   * waits on it.
   */
  readonly beforeFetching: (assignment: Readonly<Record<string, readonly number[]>>) => Promise<void>;
  /** How old the member's view of its topics' partitions may grow: a partition added to one is joined within about this long. */
  readonly metadataMaxAgeMs: number;
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
  /**
   * Moves the current member's next fetch of a partition to `offset`: for `beforeFetching`,
   * whose partitions are held, when what it learned differs from what kafkajs read at the join.
   */
  seek(topic: string, partition: number, offset: string): void;
  stop(): Promise<void>;
}

// A crashed or rejoining member is replaced after this pause, and again after it if the new one cannot start.
const REPLACE_AFTER_MS = 1000;

/** kafkajs's own test for an error that means "the group is rebalancing" (its src/errors.js isRebalancing). */
export function isRebalancing(error: unknown): boolean {
  const type = (error as { type?: unknown } | null)?.type;
  return type === 'REBALANCE_IN_PROGRESS' || type === 'NOT_COORDINATOR_FOR_GROUP' || type === 'ILLEGAL_GENERATION';
}

/** One kafkajs consumer in the group, and its start: connect, subscribe, and run up to its first join (or kafkajs giving the join up). */
interface Member {
  readonly consumer: Consumer;
  /** Unset until start(), for the first member. */
  started?: Promise<void>;
  /** Set by the first leave(); later ones wait on it. */
  left?: Promise<void>;
}

/**
 * One member of the group at a time, kept alive. kafkajs restarts a consumer on its own only
 * after an error it deems retriable, and after any other (seen once after a broker outage) it
 * disconnects for good, which would stop ingestion in silence. Here kafkajs never restarts
 * one: every crashed consumer is replaced by a new one in the same group, through the same
 * start as the first, so each start is one this module can wait for.
 *
 * That wait is what keeps the group free of members nobody owns. A kafkajs consumer
 * disconnected on its way into the group (connecting, finding its coordinator, joining)
 * does not stop: its runner is not yet marked running, so the disconnect skips it and drops
 * the reference, and the runner connects again, joins, fetches, heartbeats and holds its
 * partitions for ever while nothing commits them (kafkajs 2.2.4, runner.js start/stop). So
 * a member leaves only once its start has settled. Every rebalance is reported through
 * `onRebalance`.
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
      // Each fetch compares the partitions it knows with its join's and rejoins when a topic
      // gained some; this bounds how stale that knowledge gets (kafkajs's default is 300 s).
      metadataMaxAge: options.metadataMaxAgeMs,
      // kafkajs's own restart runs a new first join from a timer of its own: a leave could
      // not wait for that join, and a disconnect during it would leave the member behind.
      retry: { restartOnFailure: async () => false },
    });
    // A member being left is no longer current: its join or its filtered batch after the
    // fence would otherwise be taken for the next member's.
    const current = () => member.consumer === fresh && member.left === undefined;
    // kafkajs has already disconnected a crashed consumer when it reports the crash.
    fresh.on(fresh.events.CRASH, ({ payload }) => {
      if (stopping || !current()) return;
      logger.error({ err: payload.error }, 'ingest consumer crashed; a new member takes its place');
      scheduleReplacement();
    });
    // A member being left fences nothing of its own: its replacement's start did (below), and
    // a fence from it now would close admission with no join of its to open it again.
    fresh.on(fresh.events.REBALANCING, () => {
      if (current()) options.onRebalance(undefined);
    });
    // Every JoinGroup answered starts a generation, and kafkajs takes it up (a new offset
    // manager, which commits with it) only after the SyncGroup that follows: fencing here
    // comes before any commit could go out under the new generation for an older batch.
    fresh.on(fresh.events.REQUEST, ({ payload }) => {
      if (payload.apiName === 'JoinGroup' && current()) options.onRebalance(undefined);
    });
    fresh.on(fresh.events.END_BATCH_PROCESS, ({ payload }) => {
      if (payload.batchSize === 0 && current()) options.onFilteredBatch(payload.topic, payload.partition, payload.firstOffset, payload.lastOffset);
    });
    // After a join kafkajs fetches each partition again from its committed offset.
    fresh.on(fresh.events.GROUP_JOIN, ({ payload }) => {
      if (!current()) return;
      options.onRebalance(payload.memberAssignment);
      holdUntilRead(fresh, payload.memberAssignment);
    });
    return fresh;
  };

  /** Partitions paused by joins of the current member whose beforeFetching has not settled, and the latest such join. */
  let held: { topic: string; partitions: number[] }[] = [];
  let joins = 0;

  /**
   * Pauses the assignment and runs beforeFetching, then resumes it. kafkajs emits the join
   * synchronously, before its fetch loop goes on, and filters paused partitions out of every
   * fetch and every answer, so nothing of the assignment is fetched before the hook has run.
   * Only the latest join resumes, and it resumes what every join since the last resume paused:
   * an earlier join's partitions left paused would stay so if the group gave them back later.
   */
  function holdUntilRead(consumer: Consumer, assignment: Readonly<Record<string, readonly number[]>>): void {
    const join = (joins += 1);
    const partitions = Object.entries(assignment)
      .filter(([, assigned]) => assigned.length > 0)
      .map(([topic, assigned]) => ({ topic, partitions: [...assigned] }));
    held.push(...partitions);
    // Thrown here, it would land in kafkajs's join, which emitted the event.
    try {
      if (partitions.length > 0) consumer.pause(partitions);
    } catch (error) {
      logger.warn({ err: error }, 'a new assignment could not be paused before its first fetch');
    }
    void options
      .beforeFetching(assignment)
      .catch((error: unknown) => logger.warn({ err: error }, 'the step before fetching a new assignment failed; fetching anyway'))
      .finally(() => {
        // A stop keeps everything paused (pauseAll); a replaced member has nothing to resume.
        if (join !== joins || stopping || member.consumer !== consumer || member.left !== undefined) return;
        const resumed = held;
        held = [];
        try {
          if (resumed.length > 0) consumer.resume(resumed);
        } catch (error) {
          logger.error({ err: error }, 'a new assignment could not be resumed; a new member takes its place');
          scheduleReplacement();
        }
      });
  }

  function begin(joining: Member): Promise<void> {
    const { consumer } = joining;
    // A member left (or a stop) while it connects does not go on to join: that would cost
    // the group two rebalances, and the stop a whole join.
    const wanted = () => !stopping && joining.left === undefined;
    joining.started = (async () => {
      if (!wanted()) return;
      await consumer.connect();
      await consumer.subscribe({ topics: [...options.topics], fromBeginning: true });
      if (!wanted()) return;
      await consumer.run({ autoCommit: false, eachBatchAutoResolve: false, ...options.run });
    })();
    return joining.started;
  }

  /**
   * Disconnects `gone` once its start has settled. Only the current member is ever left
   * (the member changes only once the one before it has left), so stop() waits for every
   * leave by leaving the current member. The wait is bounded by kafkajs's own join timeouts (a JoinGroup waits up to the rebalance
   * timeout), and the process's shutdown deadline bounds a stop beyond them.
   */
  function leave(gone: Member): Promise<void> {
    if (gone.left !== undefined) return gone.left;
    const left = (gone.started ?? Promise.resolve())
      .catch(() => undefined)
      .then(() => gone.consumer.disconnect())
      .catch((error: unknown) => logger.warn({ err: error }, 'the ingest consumer did not leave the group cleanly'));
    gone.left = left;
    return left;
  }

  function scheduleReplacement(): void {
    if (stopping || replacement !== undefined) return;
    replacement = setTimeout(() => {
      void (async () => {
        // The replaced member's batches are fenced off like a rebalance's. A crashed or
        // rejoining member has left already; one whose start failed may still be leaving.
        options.onRebalance(undefined);
        await leave(member);
        replacement = undefined;
        if (stopping) return;
        const next: Member = { consumer: newConsumer() };
        member = next;
        // The replaced member's pauses went with it.
        held = [];
        await begin(next).catch((error: unknown) => {
          logger.error({ err: error }, 'a new ingest consumer did not start; trying again');
          void leave(next);
          scheduleReplacement();
        });
      })();
    }, REPLACE_AFTER_MS);
  }

  // Not started until start(): a stop() before it only disconnects a consumer that never connected.
  let member: Member = { consumer: newConsumer() };

  return {
    async start() {
      const first = member;
      try {
        await begin(first);
      } catch (error) {
        await leave(first);
        throw error;
      }
    },
    rejoin() {
      if (stopping || replacement !== undefined) return;
      options.onRebalance(undefined);
      // The new member is started once the old one has left, so the two never hold the same partitions.
      void leave(member).then(scheduleReplacement);
    },
    seek(topic, partition, offset) {
      member.consumer.seek({ topic, partition, offset });
    },
    pauseAll() {
      stopping = true;
      clearTimeout(replacement);
      try {
        member.consumer.pause(options.topics.map((topic) => ({ topic })));
      } catch (error) {
        // A consumer that has not joined its group (a broker down since the start, a crash
        // before the join, a replacement still connecting) has nothing to pause; with stopping
        // set it joins only if its join was under way, and the stop disconnects it either way.
        logger.info({ err: error }, 'the ingest consumer had not joined its group; nothing to pause');
      }
    },
    async stop() {
      stopping = true;
      clearTimeout(replacement);
      await leave(member);
    },
  };
}
