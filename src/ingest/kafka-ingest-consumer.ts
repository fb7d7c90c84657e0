import type { Batch, EachBatchPayload, Kafka } from 'kafkajs';
import { REQUEST_ID_MESSAGE_HEADER } from '../commands/command-context.js';
import { createGroupCommit } from '../concurrency/group-commit.js';
import type { CompressionName } from '../kafka/compression-codecs.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import type { Logger } from '../observability/logger.js';
import { NotReady, type ReadinessProbe } from '../observability/readiness.js';
import { createCommitPipeline, FencedError, type Load } from './commit-pipeline.js';
import { ConsumedMessage } from './consumed-message.js';
import { createDeadLetterWriter, DeadLettersFencedError, defaultTransactionalIdPrefix } from './dead-letter-writer.js';
import { REJECT_REASONS, SickStoreError, type EventIngestor, type MessageFormat, type RawEventMessage, type RejectedMessage } from './event-ingestor.js';
import { createFreshness } from './freshness.js';
import { createReadGaps, type ReadGap } from './read-gaps.js';
import { createSupervisedConsumer, isRebalancing } from './supervised-consumer.js';
import { createRepeatedCondition, type RepeatedCondition } from '../observability/repeated-condition.js';

/** The steps of a batch that are retried until they succeed. */
type RetriedStep = 'store' | 'dead-letter send' | 'offset commit';

/** The Kafka timestamp (ms) of the oldest message of a batch, what a stall holds back longest; undefined for an empty batch. */
function oldestTimestamp(messages: readonly { readonly timestamp: string }[]): number | undefined {
  let oldest: number | undefined;
  for (const { timestamp } of messages) {
    const ms = Number(timestamp);
    if (Number.isFinite(ms)) oldest = Math.min(oldest ?? ms, ms);
  }
  return oldest;
}

export interface IngestConsumerOptions {
  readonly kafka: Kafka;
  readonly metrics: GatewayMetrics;
  readonly groupId: string;
  /** Each topic it reads and what its messages hold: the event topics, and the command topics whose events it derives. */
  readonly sources: readonly { readonly topic: string; readonly format: MessageFormat }[];
  readonly deadLetterTopic: string;
  /** The dead-letter topic's max.message.bytes, read at start: no send of dead letters passes it. */
  readonly deadLetterMaxBytes: number;
  /** The codec of the dead letters' record batches (KAFKA_COMPRESSION); none unless set. */
  readonly compression?: CompressionName;
  readonly ingestor: EventIngestor;
  /** Most events per store insert. */
  readonly batchSize: number;
  /** Most bytes of message values per store insert. */
  readonly batchBytes: number;
  /** Longest a partial batch waits for more events. */
  readonly batchWaitMs: number;
  /** Most events fetched and not yet stored; past it, fetching waits for the store. */
  readonly maxInFlightEvents: number;
  /** Most bytes of message values fetched and not yet stored; past it, fetching waits too. */
  readonly maxInFlightBytes: number;
  /**
   * Most bytes the fetched and not yet committed messages may cost in memory (INGEST_MAX_BUFFERED_BYTES,
   * counted by bufferedBytes in commit-pipeline.ts); past it fetching waits, and it caps what one fetch asks for.
   * Unbounded unless set.
   */
  readonly maxBufferedBytes?: number;
  /** A partition whose fetched events have waited this long for a commit is stalled (INGEST_STALL_MS). */
  readonly stallMs: number;
  /** Most bytes of one partition's records per fetch, compressed as stored: INGEST_FETCH_PARTITION_BYTES, or the largest record batch its topics accept if that is more. */
  readonly fetchPartitionBytes: number;
  /** Silence after which the group hands this member's partitions to another; heartbeats go every third of it. */
  readonly sessionTimeoutMs: number;
  /** How old the consumer's view of its topics' partitions may grow: partitions added to one are read within about this long (INGEST_METADATA_MAX_AGE_MS). */
  readonly metadataMaxAgeMs: number;
  /** What each input partition's dead-letter transactional id starts with (INGEST_TRANSACTIONAL_ID_PREFIX); the group's name and `.dead-letters.` unless set. */
  readonly transactionalIdPrefix?: string | undefined;
  readonly logger: Logger;
}

export interface IngestConsumer {
  start(): Promise<void>;
  /** Fails while a partition is stalled, naming it: for the consumer's /readyz. */
  readonly readiness: ReadinessProbe;
  stop(): Promise<void>;
}

const BACKOFF_MS = { initial: 200, max: 10_000 };

/**
 * What one fetch brings. A fetch waits for 64 KiB (or 250 ms): answered at the first
 * message, a consumer of a steady trickle (the command topics under enrollments) fetched,
 * handled and committed a few messages at a time, and its fetches and commits slowed the
 * broker's acknowledgements of the very commands it was reading. The byte bounds count
 * records compressed, as the broker stores them, and kafkajs decodes a whole fetch before
 * it hands over any batch: why a partition's share is 1 MiB unless set, and what it cost
 * at 4 MiB, is in docs/decisions/ingest-batches.md ("What a fetch brings"). A fetch asks for
 * eight partitions' shares in all, more than the default six partitions of a topic take,
 * below what the protocol's 32-bit field holds (a topic's limit may be far above 1 MiB).
 */
export function fetchBytes(partitionBytes: number, bufferedBytes = Infinity) {
  // A fetch is decoded whole before its batches wait for room under the byte budget, so
  // what it brings is what the budget can be overrun by: at most an eighth of the budget,
  // never less than one partition's share (a record batch must come whole). A compressed
  // fetch decodes to several times its size, which the eighth leaves room for.
  const maxBytes = Math.max(partitionBytes, Math.min(8 * partitionBytes, Math.floor(bufferedBytes / 8), 2 ** 31 - 1));
  return { minBytes: Math.min(64 * 1024, maxBytes), maxBytesPerPartition: partitionBytes, maxBytes };
}

/**
 * One line per command whose event was stored, naming the request that sent it: commands
 * are few beside telemetry, and this line is where an operator following a request id
 * from the gateway's access log finds it stored. Telemetry batches are not logged per event.
 */
function logStoredCommands(logger: Logger, messages: readonly RawEventMessage[], rejected: readonly RejectedMessage[]): void {
  const refused = new Set(rejected.map((r) => r.message));
  for (const message of messages) {
    if (message.format === undefined || message.format === 'canonical-event' || refused.has(message)) continue;
    const requestId = message.headers?.[REQUEST_ID_MESSAGE_HEADER];
    logger.info({ requestId: requestId?.toString(), ...message.source }, 'command event stored');
  }
}

/** A promise resolved from outside (Promise.withResolvers, which Node 20 lacks). */
function signal(): { readonly promise: Promise<void>; readonly fire: () => void } {
  let fire!: () => void;
  const promise = new Promise<void>((resolve) => (fire = resolve));
  return { promise, fire };
}

const partitionName = (topic: string, partition: number) => `${topic}/${partition}`;

/** A fetched batch as its steps see it: where it came from, and the kafkajs payload its commits go through. */
interface BatchContext {
  readonly topic: string;
  readonly partition: number;
  readonly payload: Pick<EachBatchPayload, 'isRunning' | 'commitOffsetsIfNecessary'>;
  /** Whether kafkajs has given the batch up (its partition sought elsewhere). */
  readonly isStale: () => boolean;
  /** The Kafka timestamp (ms) of its oldest message, what a stall holds back longest; none for a batch with no message. */
  readonly heldSince?: number | undefined;
  /** Its link in the partition's commit chain, once tracked. */
  settled?: Promise<void>;
}

const NO_LOAD: Load = { events: 0, bytes: 0 };

/**
 * The longest the partitions of a new assignment wait for their committed offsets to be
 * read: past it they are fetched anyway, and a gap below a log start in that generation
 * goes unreported (a warning says so). A broker that cannot answer in this long cannot
 * serve fetches either.
 */
const POSITIONS_TIMEOUT_MS = 10_000;

/**
 * The offset kafkajs asked the broker for; after it found that offset deleted, the log start
 * it moved to. kafkajs 2.2.4 keeps it on every batch (src/consumer/batch.js) though its
 * typings leave it out; without it, the first record's offset stands in, which differs only
 * on a compacted topic.
 */
function fetchedOffset(batch: Batch): bigint {
  const fetched = 'fetchedOffset' in batch ? batch.fetchedOffset : undefined;
  return BigInt(typeof fetched === 'string' ? fetched : batch.firstOffset() ?? batch.lastOffset());
}

/** What a message weighs against the byte bounds: its value, which is what an insert carries. */
const valueBytes = (message: RawEventMessage): number => message.value?.length ?? 0;

function partitionLabels(name: string): { topic: string; partition: string } {
  const slash = name.lastIndexOf('/');
  return { topic: name.slice(0, slash), partition: name.slice(slash + 1) };
}

/**
 * Reads the event topics and the gateway's command topics (committed data only) into the
 * store; a command is stored as the canonical event derived from it. Batches from all
 * partitions being consumed are merged into one insert of up to batchSize events or
 * batchWaitMs, because ClickHouse wants thousands of rows per insert. A partition's offsets
 * are committed only after its events are stored and its invalid messages are on the DLQ:
 * delivery is at least once, and the store folds the copies a redelivery brings.
 *
 * What a producer sends cannot stop a partition: an invalid message, or a valid one the
 * store refuses on its own, is dead-lettered with its reason while its neighbours are
 * stored (src/ingest/event-ingestor.ts). A failure is kept to what caused it: a merged
 * insert that failed for anything but a sick store is redone writer by writer, and while
 * the store is sick each batch is retried with backoff and nothing is committed or
 * dead-lettered; heartbeats continue throughout, so the group keeps the member. After a
 * rebalance, batches of the old generation neither commit nor retry (commit-pipeline.ts).
 * A partition whose fetched events wait longer than `stallMs` for a commit shows as
 * stalled on /metrics and fails the readiness probe.
 */
export function createIngestConsumer(options: IngestConsumerOptions): IngestConsumer {
  const logger = options.logger.child({ module: 'ingest-consumer' });
  const { metrics } = options;
  const formats = new Map(options.sources.map((s) => [s.topic, s.format]));
  const topics = [...formats.keys()];
  const pipeline = createCommitPipeline({ events: options.maxInFlightEvents, bytes: options.maxInFlightBytes, buffered: options.maxBufferedBytes ?? Infinity });
  let stopping = false;
  /** Partitions of the current assignment, by name: the label sets this member reports. */
  let assigned = new Set<string>();
  /** Resolves at the next rebalance, so a batch waiting out its backoff stops at once. */
  let nextRebalance = signal();
  const freshness = createFreshness(metrics);

  function onRebalance(assignment: Readonly<Record<string, readonly number[]>> | undefined): void {
    // A rebalance's start closes admission until the join that gives the assignment (commit-pipeline.ts).
    if (assignment === undefined) pipeline.fence();
    else pipeline.joined();
    nextRebalance.fire();
    nextRebalance = signal();
    // Each partition is read next from its committed offset, which readPositions gives.
    gaps.clear();
    if (assignment === undefined) return;
    const now = new Set(Object.entries(assignment).flatMap(([topic, partitions]) => partitions.map((p) => partitionName(topic, p))));
    for (const name of assigned) {
      if (now.has(name)) continue;
      const labels = partitionLabels(name);
      metrics.consumerLag.remove(labels);
      metrics.partitionStalled.remove(labels);
    }
    for (const name of now) {
      metrics.partitionStalled.set(partitionLabels(name), 0);
      // At zero from the join, so that the first gap counted is an increase (docs/decisions/alerts.md, "Counters reported at zero").
      metrics.retentionSkipped.inc(partitionLabels(name), 0);
    }
    assigned = now;
    freshness.assigned(now);
  }

  const admin = options.kafka.admin();
  const gaps = createReadGaps();

  /**
   * Reads the group's committed offsets of a new assignment before any of it is fetched (the
   * supervised consumer holds the fetches): the positions its first batches must start at,
   * unless what lay there was deleted. Read any later, they could already be kafkajs's own
   * reset of a deleted offset, and the gap would be lost.
   */
  async function readPositions(assignment: Readonly<Record<string, readonly number[]>>): Promise<void> {
    const generation = pipeline.generation();
    const topicsAssigned = Object.keys(assignment).filter((topic) => (assignment[topic] ?? []).length > 0);
    if (topicsAssigned.length === 0) return;
    let timer: NodeJS.Timeout | undefined;
    let committed: Awaited<ReturnType<typeof admin.fetchOffsets>>;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer in ${POSITIONS_TIMEOUT_MS} ms`)), POSITIONS_TIMEOUT_MS);
      });
      // The dead-letter transactional ids first: a last owner's transaction still being
      // committed then lands before the offsets are read (docs/decisions/dead-letters-once.md).
      const claimed = deadLetters
        .claim(Object.entries(assignment).flatMap(([topic, partitions]) => partitions.map((partition) => ({ topic, partition }))))
        .catch((error: unknown) => logger.warn({ err: error }, "dead-letter transactional ids not taken over at the join: a last owner's late dead letters may be written twice"));
      const read = claimed.then(() => admin.fetchOffsets({ groupId: options.groupId, topics: topicsAssigned }));
      read.catch(() => undefined);
      committed = await Promise.race([read, timeout]);
    } catch (error) {
      logger.warn({ err: error }, 'committed offsets not read after the join: offsets deleted before they were read go unreported until the next join');
      return;
    } finally {
      clearTimeout(timer);
    }
    // A rebalance since the join: the next join reads its own.
    if (pipeline.generation() !== generation) return;
    for (const { topic, partitions } of committed) {
      const mine = new Set(assignment[topic] ?? []);
      for (const { partition, offset } of partitions) {
        // -1: none committed, read from the log start; -2: kafkajs's own reset marker. Neither is a position.
        if (!mine.has(partition) || BigInt(offset) < 0n) continue;
        gaps.expect(topic, partition, BigInt(offset));
        // kafkajs read the offsets at the join, maybe before a last owner's transaction committed one past them.
        try {
          supervised.seek(topic, partition, offset);
        } catch (error) {
          logger.warn({ err: error, topic, partition }, 'a partition not moved to its committed offset after the join');
        }
      }
    }
  }

  function reportGap(gap: ReadGap): void {
    const { topic, partition } = gap;
    metrics.retentionSkipped.inc({ topic, partition: String(partition) }, Number(gap.count));
    logger.error(
      { topic, partition, firstOffset: gap.first.toString(), lastOffset: gap.last.toString(), skipped: Number(gap.count) },
      'offsets deleted before they were read (retention or deleteRecords); their messages are in neither the feed nor the dead-letter topic',
    );
  }

  const supervised = createSupervisedConsumer({
    kafka: options.kafka,
    groupId: options.groupId,
    topics,
    sessionTimeoutMs: options.sessionTimeoutMs,
    fetch: fetchBytes(options.fetchPartitionBytes, options.maxBufferedBytes),
    // Every assigned partition may wait in the same insert; 64 bounds the fan-in.
    run: { partitionsConsumedConcurrently: 64, eachBatch },
    onRebalance,
    onFilteredBatch,
    beforeFetching: readPositions,
    metadataMaxAgeMs: options.metadataMaxAgeMs,
    logger,
  });

  const deadLetters = createDeadLetterWriter({
    kafka: options.kafka,
    topic: options.deadLetterTopic,
    maxMessageBytes: options.deadLetterMaxBytes,
    compression: options.compression ?? 'none',
    groupId: options.groupId,
    transactionalIdPrefix: options.transactionalIdPrefix ?? defaultTransactionalIdPrefix(options.groupId),
    logger,
  });
  // Every reason is reported from the start, at zero, so an alert on one needs no first occurrence.
  for (const reason of REJECT_REASONS) metrics.deadLettered.inc({ reason }, 0);

  /** The verdict of the last insert that carried a message, for its batch to send on to the DLQ. */
  const rejections = new WeakMap<RawEventMessage, RejectedMessage>();

  const inserts = createGroupCommit<RawEventMessage>(
    async (messages) => {
      metrics.ingestBatchSize.observe(messages.length);
      const stopTimer = metrics.insertDuration.startTimer();
      const result = await options.ingestor.ingestMessages(messages, freshness.visible);
      stopTimer();
      logStoredCommands(logger, messages, result.rejected);
      for (const rejection of result.rejected) rejections.set(rejection.message, rejection);
    },
    {
      maxItems: options.batchSize,
      // A backlog of large events is split by size too: one body must fit a Buffer, and the store's memory.
      weigh: valueBytes,
      maxWeight: options.batchBytes,
      lingerMs: options.batchWaitMs,
      // Two flushes at once: one batch is parsed and validated here while the store writes the other.
      concurrency: 2,
      // A sick store fails every writer alike; any other failure is redone writer by writer,
      // so it holds back only the partition whose messages caused it.
      isolate: (error) => !(error instanceof SickStoreError),
    },
  );

  /**
   * Runs `step` until it succeeds, with backoff. It gives up (and so breaks its partition's
   * commit chain) only when the consumer is stopping, the partition was taken away, or a
   * rebalance fenced the batch off; the group then delivers the batch again.
   */
  async function withRetry<T>(what: RetriedStep, batch: BatchContext, generation: number, step: () => Promise<T>): Promise<T> {
    const { topic, partition, payload } = batch;
    const fenced = () => pipeline.generation() !== generation;
    const stall = stalls[what];
    for (let attempt = 1; ; attempt += 1) {
      if (fenced()) throw new FencedError(partitionName(topic, partition));
      try {
        const done = await step();
        stall.ended({ topic, partition });
        return done;
      } catch (error) {
        // A producer fenced by the partition's new owner must not take its transactional id back.
        if (stopping || !payload.isRunning() || batch.isStale() || fenced() || error instanceof DeadLettersFencedError) throw error;
        const delay = Math.min(BACKOFF_MS.max, BACKOFF_MS.initial * 2 ** (attempt - 1));
        // Every batch of every partition retries while the store is down: one condition, not a line a retry.
        stall.occurred(error, { topic, partition, attempt, delayMs: delay }, batch.heldSince);
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, delay))), nextRebalance.promise]);
        clearTimeout(timer);
      }
    }
  }

  /** The steps a batch retries until they succeed, each logged as one condition while it fails (docs/decisions/outage-logs.md). */
  const stalls: Record<RetriedStep, RepeatedCondition> = {
    store: createRepeatedCondition({ logger, what: 'storing ingested batches failed' }),
    'dead-letter send': createRepeatedCondition({ logger, what: 'sending dead letters failed' }),
    'offset commit': createRepeatedCondition({ logger, what: 'committing ingested offsets failed' }),
  };

  /** Stores a batch while the store is sick; resolves with the messages to dead-letter, in their order. */
  const storeBatch = (batch: BatchContext, messages: RawEventMessage[], generation: number) =>
    withRetry('store', batch, generation, async () => {
      await inserts.write(messages);
      return messages.flatMap((m) => rejections.get(m) ?? []);
    });

  /**
   * Sends a batch's dead letters and commits its offset in one transaction: its commit.
   * It runs in the partition's commit chain, so a partition's dead letters reach the DLQ in
   * the order their messages came, across batches too (docs/decisions/dead-letters-once.md).
   */
  async function deadLetter(batch: BatchContext, rejected: readonly RejectedMessage[], generation: number, next: string): Promise<void> {
    const { topic, partition } = batch;
    await withRetry('dead-letter send', batch, generation, () => deadLetters.writeCommitting(rejected, { topic, partition, next }));
    for (const { reason } of rejected) metrics.deadLettered.inc({ reason });
    logger.warn({ count: rejected.length, reasons: [...new Set(rejected.map((r) => r.reason))], ...rejected[0]!.message.source }, 'dead-lettered events');
    // Validation failures are the producer's to fix; a refusal by the store may be ours (a constraint, a type), so each is named.
    for (const { message, reason, detail } of rejected) {
      if (reason === 'store-rejected') logger.warn({ ...message.source, detail }, 'store refused an event; dead-lettered');
    }
  }

  /**
   * One attempt to commit, retried by withRetry like every other step. The payload's commit
   * goes straight to the group with the generation kafkajs holds at the call, which the
   * fence check just before it (in the same tick) has matched to the batch's: the member
   * fences at every JoinGroup (src/ingest/supervised-consumer.ts), before kafkajs takes up a
   * new generation. consumer.commitOffsets would instead retry inside kafkajs, reading the
   * group's generation again on each try, so after a rejoin an old batch's commit went out
   * under the new generation and moved the offset back. It also commits nothing once stop()
   * has begun, which would leave every batch finished during a shutdown to be delivered again.
   */
  async function commit({ topic, partition, payload }: BatchContext, next: string): Promise<void> {
    await payload.commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: next }] }] });
  }

  /**
   * Tracks the commit of a batch's partition up to `next`, once the batch's messages (if any)
   * are stored and dead-lettered and every earlier batch of the partition is committed.
   */
  function trackCommit(batch: BatchContext, generation: number, load: Load, next: string, lag: number, stored: Promise<readonly RejectedMessage[]>): void {
    const { topic, partition } = batch;
    const link = pipeline.track(partitionName(topic, partition), generation, load, stored, async (rejected) => {
      metrics.consumerLag.set({ topic, partition: String(partition) }, lag);
      // A batch with dead letters commits in their transaction; the rest, the common case, as before.
      if (rejected.length > 0) await deadLetter(batch, rejected, generation, next);
      else await withRetry('offset commit', batch, generation, () => commit(batch, next));
    });
    link.catch((error: unknown) => {
      if (stopping) return;
      if (error instanceof FencedError) {
        logger.info({ topic, partition }, 'batch of an earlier group generation not committed; the group delivers it again');
        return;
      }
      if (pipeline.generation() !== generation) return;
      // Every step retries until a fence or a stop, so this is kafkajs giving the batch up
      // (its partition sought or its runner stopped): nothing after it in the chain commits.
      // A new member is the way back: the group then delivers the partition from its last commit.
      logger.error({ err: error, topic, partition }, 'batch not committed and its partition would wait for ever; rejoining the group');
      supervised.rejoin();
    });
    batch.settled = link;
  }

  /**
   * The latest batch's payload and its generation: what commits go through for a batch
   * kafkajs filtered out whole. A payload of an earlier generation may be a replaced
   * member's, whose commits the group refuses, so only the current generation's is used.
   */
  let latest: { readonly payload: EachBatchPayload; readonly generation: number } | undefined;

  /**
   * A fetch that held only transaction markers or aborted records reaches no handler:
   * kafkajs moves past it and, with autoCommit off, commits nothing. Its partition's offset
   * is committed past it in the partition's chain here, or a drained transactional partition
   * would stay one offset (its last marker) short of its end for good, shown as lag.
   */
  function onFilteredBatch(topic: string, partition: number, firstOffset: string, lastOffset: string): void {
    if (pipeline.admitting()) {
      const gap = gaps.read(topic, partition, BigInt(firstOffset), BigInt(lastOffset) + 1n);
      if (gap !== undefined) reportGap(gap);
    }
    // Between a rebalance's start and the join, nothing commits: not even a filtered batch's offset.
    if (latest === undefined || latest.generation !== pipeline.generation() || !pipeline.admitting() || stopping) return;
    const batch: BatchContext = { topic, partition, payload: latest.payload, isStale: () => false };
    trackCommit(batch, latest.generation, NO_LOAD, (BigInt(lastOffset) + 1n).toString(), 0, Promise.resolve([]));
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    latest = { payload, generation: pipeline.generation() };
    if (batch.messages.length === 0) return;
    const format = formats.get(batch.topic) ?? 'canonical-event';
    const messages: RawEventMessage[] = batch.messages.map((m) => new ConsumedMessage(format, m, batch.topic, batch.partition));
    // Read once: a fence while the batch waits for room makes it an earlier generation's, everywhere alike.
    const generation = pipeline.generation();
    let bytes = 0;
    for (const message of messages) bytes += valueBytes(message);
    const load = { events: messages.length, bytes };
    // Waiting for room (a slow or sick store) can outlast the session; heartbeat through it,
    // and give way at once when the group rebalances: the batch is then delivered again.
    const beat = setInterval(
      () =>
        void payload.heartbeat().catch((error: unknown) => {
          if (isRebalancing(error)) onRebalance(undefined);
        }),
      Math.floor(options.sessionTimeoutMs / 5),
    );
    let admitted: boolean;
    try {
      admitted = await pipeline.admit(load);
    } finally {
      clearInterval(beat);
    }
    if (!admitted) return;
    // The batch's last record, a transaction's marker included: the commit goes past it.
    const last = batch.lastOffset();
    const gap = gaps.read(batch.topic, batch.partition, fetchedOffset(batch), BigInt(last) + 1n);
    if (gap !== undefined) reportGap(gap);
    const context: BatchContext = { topic: batch.topic, partition: batch.partition, payload, isStale: () => payload.isStale(), heldSince: oldestTimestamp(batch.messages) };
    const read = freshness.fetched(batch.topic, batch.partition, batch.messages, Number(batch.offsetLag()));
    const stored = storeBatch(context, messages, generation);
    // A batch that never stores is delivered again after a rebalance, which resets what is pending.
    void stored.then(read, () => undefined);
    trackCommit(context, generation, load, (BigInt(last) + 1n).toString(), Number(batch.offsetLag()), stored);
    // kafkajs fetches on from here while the batch is stored; the commit waits for the store.
    payload.resolveOffset(last);
    // A batch handed over while the consumer stops is committed before the member leaves.
    if (!payload.isRunning()) await context.settled;
  }

  const stalledNow = () => pipeline.stalled(options.stallMs);
  let watch: NodeJS.Timeout | undefined;
  function reportStalls(): void {
    const stalled = new Set(stalledNow().map((s) => s.partition));
    for (const name of assigned) metrics.partitionStalled.set(partitionLabels(name), stalled.has(name) ? 1 : 0);
    freshness.report();
  }

  return {
    readiness: {
      name: 'ingest',
      async check() {
        const stalled = stalledNow();
        if (stalled.length === 0) return;
        const list = stalled.map((s) => `${s.partition} (${Math.round(s.waitingMs / 1000)} s)`).join(', ');
        throw new NotReady(`ingestion stalled: fetched events have waited longer than ${options.stallMs} ms for a commit on ${list}`);
      },
    },
    async start() {
      await deadLetters.start();
      await admin.connect();
      await supervised.start();
      watch = setInterval(reportStalls, Math.min(1000, Math.max(100, Math.floor(options.stallMs / 4))));
      watch.unref();
      logger.info({ topics, groupId: options.groupId, fetchPartitionBytes: options.fetchPartitionBytes, maxBufferedBytes: options.maxBufferedBytes }, 'ingest consumer running');
    },
    async stop() {
      stopping = true;
      clearInterval(watch);
      // Fetch nothing more, and let every batch already handed over be stored and committed
      // while the member is still in the group (after disconnect() no commit gets through).
      supervised.pauseAll();
      await pipeline.settled();
      await supervised.stop();
      await inserts.drain().catch(() => undefined);
      await deadLetters.stop();
      await admin.disconnect();
    },
  };
}
