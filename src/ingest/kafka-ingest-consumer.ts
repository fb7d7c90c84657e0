import type { Consumer, EachBatchPayload, IHeaders, Kafka, Producer } from 'kafkajs';
import { REQUEST_ID_MESSAGE_HEADER } from '../commands/command-context.js';
import { partitionLedger, sendCompletely } from '../kafka/complete-send.js';
import type { Logger } from '../observability/logger.js';
import type { GatewayMetrics } from '../metrics/gateway-metrics.js';
import { createGroupCommit } from '../concurrency/group-commit.js';
import { createCommitPipeline } from './commit-pipeline.js';
import { deadLetterMessage } from './dead-letter.js';
import { REJECT_REASONS, type EventIngestor, type MessageFormat, type RawEventMessage, type RejectedMessage } from './event-ingestor.js';

export interface IngestConsumerOptions {
  readonly kafka: Kafka;
  readonly metrics: GatewayMetrics;
  readonly groupId: string;
  /** Each topic it reads and what its messages hold: the event topics, and the command topics whose events it derives. */
  readonly sources: readonly { readonly topic: string; readonly format: MessageFormat }[];
  readonly deadLetterTopic: string;
  readonly ingestor: EventIngestor;
  /** Most events per store insert. */
  readonly batchSize: number;
  /** Longest a partial batch waits for more events. */
  readonly batchWaitMs: number;
  /** Most events fetched and not yet stored; past it, fetching waits for the store. */
  readonly maxInFlightEvents: number;
  /** Silence after which the group hands this member's partitions to another; heartbeats go every third of it. */
  readonly sessionTimeoutMs: number;
  readonly logger: Logger;
}

export interface IngestConsumer {
  start(): Promise<void>;
  stop(): Promise<void>;
}

const BACKOFF_MS = { initial: 200, max: 10_000 };
const FETCH_BYTES = { perPartition: 4 * 1024 * 1024, total: 32 * 1024 * 1024 };
// A consumer kafkajs gave up on is replaced after this pause, and again after it if the new one cannot start.
const REPLACE_AFTER_MS = 1000;

function stringHeaders(headers: IHeaders | undefined): Record<string, Buffer | string> {
  const out: Record<string, Buffer | string> = {};
  for (const [name, value] of Object.entries(headers ?? {})) {
    // Repeated headers keep their first value; undefined ones are dropped.
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined) out[name] = first;
  }
  return out;
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

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Reads the event topics and the gateway's command topics (committed data only) into the
 * store; a command is stored as the canonical event derived from it. Batches from all
 * partitions being consumed are merged into one insert of up to batchSize events or
 * batchWaitMs, because ClickHouse wants thousands of rows per insert. A partition's offsets are
 * committed only after its events are stored and its invalid messages are on the DLQ:
 * delivery is at least once, and the store folds the copies a redelivery brings.
 * An event the store refuses for its data is found by splitting the insert and
 * dead-lettered (`store-rejected`) while the rest of the merged batch is stored. While the
 * store is sick each batch is retried with backoff and nothing is committed or
 * dead-lettered; heartbeats continue throughout, so the group keeps the member.
 */
export function createIngestConsumer(options: IngestConsumerOptions): IngestConsumer {
  const logger = options.logger.child({ module: 'ingest-consumer' });
  const formats = new Map(options.sources.map((s) => [s.topic, s.format]));
  const topics = [...formats.keys()];
  let stopping = false;
  const pipeline = createCommitPipeline(options.maxInFlightEvents);
  let replacement: NodeJS.Timeout | undefined;
  const newConsumer = (): Consumer => {
    const fresh = options.kafka.consumer({
      groupId: options.groupId,
      readUncommitted: false,
      sessionTimeout: options.sessionTimeoutMs,
      heartbeatInterval: Math.floor(options.sessionTimeoutMs / 3),
      maxWaitTimeInMs: 250,
      // kafkajs's 1 MiB per partition is about 3,000 events, fewer than one insert wants.
      maxBytesPerPartition: FETCH_BYTES.perPartition,
      maxBytes: FETCH_BYTES.total,
      // After a crash (the broker gone, say) kafkajs restarts the consumer on a timer that
      // it arms after asking this; a stop() that came in between would clear no timer and
      // leave the restart reconnecting forever. So a stopping consumer never restarts.
      retry: { restartOnFailure: async () => !stopping },
    });
    // kafkajs restarts a consumer only after an error it deems retriable; after any other
    // (seen once after a broker outage) it disconnects for good and ingestion would stop
    // in silence. Such a consumer is replaced by a new one in the same group.
    fresh.on(fresh.events.CRASH, ({ payload }) => {
      if (payload.restart || stopping) return;
      logger.error({ err: payload.error }, 'ingest consumer stopped on an error kafkajs does not restart after; starting a new one');
      scheduleReplacement();
    });
    // After a rebalance kafkajs fetches each partition again from its committed offset, so
    // chains broken before it (or still running) must not hold back the new batches.
    fresh.on(fresh.events.GROUP_JOIN, () => pipeline.reset());
    return fresh;
  };
  let consumer: Consumer = newConsumer();

  async function run(current: Consumer): Promise<void> {
    await current.connect();
    await current.subscribe({ topics, fromBeginning: true });
    await current.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      // Every assigned partition may wait in the same insert; 64 bounds the fan-in.
      partitionsConsumedConcurrently: 64,
      eachBatch,
    });
  }

  function scheduleReplacement(): void {
    if (stopping || replacement !== undefined) return;
    replacement = setTimeout(() => {
      replacement = undefined;
      if (stopping) return;
      consumer = newConsumer();
      run(consumer).catch((error: unknown) => {
        logger.error({ err: error }, 'a new ingest consumer did not start; trying again');
        scheduleReplacement();
      });
    }, REPLACE_AFTER_MS);
  }

  // A dead letter whose partition kafkajs left out of a send would be lost once the offsets are committed.
  const ledger = partitionLedger();
  const deadLetters: Producer = options.kafka.producer({ idempotent: true, maxInFlightRequests: 1, createPartitioner: ledger.createPartitioner });
  // Every reason is reported from the start, at zero, so an alert on one needs no first occurrence.
  for (const reason of REJECT_REASONS) options.metrics.deadLettered.inc({ reason }, 0);

  const inserts = createGroupCommit<RawEventMessage>(
    async (messages) => {
      const { metrics } = options;
      metrics.ingestBatchSize.observe(messages.length);
      const stopTimer = metrics.insertDuration.startTimer();
      const result = await options.ingestor.ingestMessages(messages);
      stopTimer();
      logStoredCommands(logger, messages, result.rejected);
      if (result.rejected.length > 0) {
        await sendCompletely(deadLetters, ledger, { acks: -1, topicMessages: [{ topic: options.deadLetterTopic, messages: result.rejected.map(deadLetterMessage) }] }, (missing) =>
          logger.warn({ missing }, 'kafkajs acknowledged a send without some of its partitions; sending those again'),
        );
        for (const { reason } of result.rejected) metrics.deadLettered.inc({ reason });
        logger.warn({ count: result.rejected.length, reasons: [...new Set(result.rejected.map((r) => r.reason))] }, 'dead-lettered events');
        // Validation failures are the producer's to fix; a refusal by the store may be ours (a constraint, a type), so each is named.
        for (const { message, reason, detail } of result.rejected) {
          if (reason === 'store-rejected') logger.warn({ ...message.source, detail }, 'store refused an event; dead-lettered');
        }
      }
    },
    // Two flushes at once: one batch is parsed and validated here while the store writes the other.
    { maxItems: options.batchSize, lingerMs: options.batchWaitMs, concurrency: 2 },
  );

  /**
   * Stores a batch, retrying with backoff while the store is sick. It gives up (and so
   * breaks its partition's commit chain) only when the consumer is stopping or the
   * partition was taken away; the group then delivers the batch again.
   */
  async function storeWithRetry(payload: EachBatchPayload, messages: RawEventMessage[]): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      try {
        await inserts.write(messages);
        return;
      } catch (error) {
        if (stopping || !payload.isRunning() || payload.isStale()) throw error;
        const delay = Math.min(BACKOFF_MS.max, BACKOFF_MS.initial * 2 ** (attempt - 1));
        logger.warn({ err: error, attempt, delayMs: delay, topic: payload.batch.topic, partition: payload.batch.partition }, 'store failed; retrying batch');
        await sleep(delay);
      }
    }
  }

  async function commit(payload: EachBatchPayload, next: string): Promise<void> {
    const { topic, partition } = payload.batch;
    if (payload.isRunning()) {
      await consumer.commitOffsets([{ topic, partition, offset: next }]);
    } else {
      // Once stop() has begun, kafkajs's consumer.commitOffsets silently commits nothing, so
      // every batch finished during a shutdown would be stored and then delivered again. The
      // payload's commit goes straight to the group, which this member has not left yet.
      await payload.commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: next }] }] });
    }
  }

  async function eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch } = payload;
    if (batch.messages.length === 0) return;
    const format = formats.get(batch.topic) ?? 'canonical-event';
    const messages: RawEventMessage[] = batch.messages.map((m) => ({
      format,
      value: m.value,
      key: m.key,
      headers: stringHeaders(m.headers),
      source: { topic: batch.topic, partition: batch.partition, offset: m.offset },
    }));
    // Waiting for room (a slow or sick store) can outlast the session; heartbeat through it.
    const beat = setInterval(() => payload.heartbeat().catch(() => undefined), Math.floor(options.sessionTimeoutMs / 5));
    try {
      await pipeline.admit(messages.length);
    } finally {
      clearInterval(beat);
    }
    const last = batch.messages.at(-1)!.offset;
    const lag = Number(batch.offsetLag());
    const link = pipeline.track(`${batch.topic}/${batch.partition}`, messages.length, storeWithRetry(payload, messages), async () => {
      options.metrics.consumerLag.set({ topic: batch.topic, partition: String(batch.partition) }, lag);
      await commit(payload, (BigInt(last) + 1n).toString());
    });
    link.catch((error: unknown) => {
      if (!stopping) logger.warn({ err: error, topic: batch.topic, partition: batch.partition }, 'batch not committed; the group delivers it again');
    });
    // kafkajs fetches on from here while the batch is stored; the commit waits for the store.
    payload.resolveOffset(last);
    // A batch handed over while the consumer stops is committed before the member leaves.
    if (!payload.isRunning()) await link;
  }

  return {
    async start() {
      await deadLetters.connect();
      await run(consumer);
      logger.info({ topics, groupId: options.groupId }, 'ingest consumer running');
    },
    async stop() {
      stopping = true;
      clearTimeout(replacement);
      // Fetch nothing more, and let every batch already handed over be stored and committed
      // while the member is still in the group (after disconnect() no commit gets through).
      consumer.pause(topics.map((topic) => ({ topic })));
      await pipeline.settled();
      await consumer.disconnect();
      await inserts.drain().catch(() => undefined);
      await deadLetters.disconnect();
    },
  };
}
