import type { Kafka, KafkaMessage } from 'kafkajs';

/** Letters of one partition read in a row, and the offset to resume from after them. */
export interface Chunk {
  readonly partition: number;
  readonly messages: readonly KafkaMessage[];
  /** The offset after this chunk: where a later run starts once this chunk is done. */
  readonly next: bigint;
}

export interface ReadToMarksOptions {
  readonly kafka: Kafka;
  readonly topic: string;
  readonly groupId: string;
  readonly sessionTimeoutMs: number;
  /** Most letters a chunk holds (one transaction of a replay). */
  readonly chunkSize: number;
  /** Handles one chunk; its `next` counts as reached once it returns. */
  readonly handle: (chunk: Chunk) => Promise<void>;
}

/**
 * Reads `topic` as committed data, from the group's committed offsets (the start of each
 * partition for a new group) up to the ends taken when it starts, chunk by chunk, and
 * returns once each partition's end is reached; what arrives later is left for the next
 * run. Commits nothing itself: a chunk's handler decides what its progress means.
 *
 * The end counts as reached from the offsets seen, not from the last record handed over:
 * a topic written in transactions ends in a commit marker, which a reader of committed
 * data never receives as a record. A partition whose last records are such markers is
 * finished with an empty chunk at its end.
 */
export async function readToMarks(options: ReadToMarksOptions): Promise<void> {
  const { kafka, topic, groupId } = options;
  const ends = await startAndEnd(kafka, topic, groupId);
  const reached = new Map<number, bigint>([...ends].map(([p, e]) => [p, e.start]));
  // Batches a reader of committed data is handed nothing of (markers, aborted records)
  // still move the position: kafkajs reports them only through an event.
  const filtered = new Map<number, bigint>();
  const at = (p: number) => {
    const a = reached.get(p) ?? 0n;
    const b = filtered.get(p) ?? 0n;
    return a > b ? a : b;
  };
  const open = () => [...ends].filter(([p, e]) => at(p) < e.end).map(([p]) => p);
  if (open().length === 0) return;

  const consumer = kafka.consumer({ groupId, readUncommitted: false, sessionTimeout: options.sessionTimeoutMs, maxWaitTimeInMs: 250 });
  let finish: (error?: Error) => void = () => undefined;
  const finished = new Promise<void>((resolve, reject) => {
    finish = (error?: Error) => (error === undefined ? resolve() : reject(error));
  });
  const check = () => {
    if (open().length === 0) finish();
  };
  consumer.on(consumer.events.START_BATCH_PROCESS, ({ payload }) => {
    if (payload.topic !== topic || payload.batchSize !== 0) return;
    const end = ends.get(payload.partition)?.end ?? 0n;
    const seen = BigInt(payload.lastOffset) + 1n;
    filtered.set(payload.partition, seen < end ? seen : end);
    check();
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachBatchAutoResolve: false,
      autoCommit: false,
      eachBatch: async (payload) => {
        const { batch } = payload;
        try {
          const end = ends.get(batch.partition)?.end ?? 0n;
          const inRange = batch.messages.filter((m) => BigInt(m.offset) < end);
          // After the batch: its last offset seen, markers included, but never past the end.
          const afterBatch = BigInt(batch.lastOffset()) + 1n;
          for (let i = 0; i < inRange.length || (i === 0 && afterBatch >= end); i += options.chunkSize) {
            if (!payload.isRunning() || payload.isStale()) return;
            const messages = inRange.slice(i, i + options.chunkSize);
            const last = i + options.chunkSize >= inRange.length;
            const afterChunk = last ? (afterBatch < end ? afterBatch : end) : BigInt(messages[messages.length - 1]!.offset) + 1n;
            if ((reached.get(batch.partition) ?? 0n) >= afterChunk) continue;
            await options.handle({ partition: batch.partition, messages, next: afterChunk });
            reached.set(batch.partition, afterChunk);
            if (messages.length > 0) payload.resolveOffset(messages[messages.length - 1]!.offset);
            await payload.heartbeat();
          }
          if ((reached.get(batch.partition) ?? 0n) >= end) consumer.pause([{ topic, partitions: [batch.partition] }]);
          check();
        } catch (error) {
          finish(error instanceof Error ? error : new Error(String(error)));
        }
      },
    });
    await finished;
  } finally {
    await consumer.disconnect();
  }
  // Partitions that ended in records a reader of committed data never receives.
  for (const [partition, end] of ends) {
    if ((reached.get(partition) ?? 0n) < end.end && (filtered.get(partition) ?? 0n) >= end.end) {
      await options.handle({ partition, messages: [], next: end.end });
    }
  }
}

interface Span {
  /** Where this group starts: its committed offset, or the log start. */
  readonly start: bigint;
  /** The end taken now. */
  readonly end: bigint;
}

async function startAndEnd(kafka: Kafka, topic: string, groupId: string): Promise<Map<number, Span>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const byPartition = new Map((committed?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
    return new Map(
      offsets.map((p) => {
        const low = BigInt(p.low);
        const at = byPartition.get(p.partition) ?? -1n;
        return [p.partition, { start: at > low ? at : low, end: BigInt(p.high) }];
      }),
    );
  } finally {
    await admin.disconnect();
  }
}
