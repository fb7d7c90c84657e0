import { setTimeout as pause } from 'node:timers/promises';
import type { ITopicConfig, Kafka, KafkaMessage, Producer } from 'kafkajs';
import { waitForLeaders } from '../../src/kafka/topics.js';
import type { CanonicalEvent } from '../../src/generated/schema-types.js';
import { canonicalEvent, uuid } from './factories.js';
import { waitFor } from './wait-for.js';

/**
 * Creates topics and waits until every partition has a leader. kafkajs's own
 * `waitForLeaders: true` asks one broker for metadata, and a broker that has not applied
 * the new topic yet answers UNKNOWN_TOPIC_OR_PARTITION, which kafkajs does not retry: on a
 * loaded machine that failed test set-ups now and then. The gateway's own wait retries it.
 */
export async function createTopics(kafka: Kafka, topics: readonly ITopicConfig[]): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    await admin.createTopics({ waitForLeaders: false, topics: [...topics] });
    await waitForLeaders(admin, topics.map((t) => t.topic));
  } finally {
    await admin.disconnect();
  }
}

export interface ReceivedMessage {
  readonly topic: string;
  readonly partition: number;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: Record<string, string>;
  readonly offset: string;
  /** The record's timestamp (milliseconds since the epoch, as text), as the producer or broker set it. */
  readonly timestamp: string;
}

export function received(topic: string, partition: number, m: KafkaMessage): ReceivedMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(m.headers ?? {})) headers[name] = String(Array.isArray(value) ? value[0] : value);
  return { topic, partition, key: m.key?.toString() ?? null, value: m.value?.toString() ?? null, headers, offset: m.offset, timestamp: m.timestamp };
}

/** True once the group has committed every partition of the topic up to its end. */
export async function committedToEnd(kafka: Kafka, groupId: string, topic: string): Promise<true | undefined> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(topic);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const byPartition = new Map((committed?.partitions ?? []).map((p) => [p.partition, p.offset]));
    return ends.every((end) => end.high === '0' || byPartition.get(end.partition) === end.high) ? true : undefined;
  } finally {
    await admin.disconnect();
  }
}

/** The group's committed offset per partition of the topic (-1 where it has none). */
export async function committedOffsets(kafka: Kafka, groupId: string, topic: string): Promise<Map<number, bigint>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return new Map((committed?.partitions ?? []).map((p) => [p.partition, BigInt(p.offset)]));
  } finally {
    await admin.disconnect();
  }
}

/** Each partition's end (high watermark) now. */
export async function topicEnds(kafka: Kafka, topic: string): Promise<Map<number, bigint>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, BigInt(p.high)]));
  } finally {
    await admin.disconnect();
  }
}

/** Every message now on the topics, read as committed data by a group of its own up to each partition's end at the call. */
export async function readToEnd(kafka: Kafka, topics: readonly string[], timeoutMs = 60_000): Promise<ReceivedMessage[]> {
  const ends = new Map<string, bigint>();
  for (const topic of topics) for (const [partition, end] of await topicEnds(kafka, topic)) ends.set(`${topic}/${partition}`, end);
  const messages: ReceivedMessage[] = [];
  const next = new Map<string, bigint>();
  const reader = kafka.consumer({ groupId: `reader-${uuid()}`, readUncommitted: false, maxWaitTimeInMs: 100 });
  await reader.connect();
  try {
    await reader.subscribe({ topics: [...topics], fromBeginning: true });
    // A transaction's marker is no message: a batch's end (a batch of only markers or aborted
    // records too, which reaches no handler) is what moves the position past it.
    reader.on(reader.events.END_BATCH_PROCESS, ({ payload }) => {
      const tp = `${payload.topic}/${payload.partition}`;
      const after = BigInt(payload.lastOffset) + 1n;
      if (after > (next.get(tp) ?? 0n)) next.set(tp, after);
    });
    await reader.run({
      eachMessage: async ({ topic, partition, message }) => {
        messages.push(received(topic, partition, message));
        next.set(`${topic}/${partition}`, BigInt(message.offset) + 1n);
      },
    });
    await waitFor(`${topics.join(', ')} read to the end`, async () =>
      [...ends].every(([tp, end]) => end <= (next.get(tp) ?? 0n)) ? true : undefined, timeoutMs, 100);
    return messages;
  } finally {
    await reader.disconnect();
  }
}

/** Another service publishing without pause until stop(); `produced` holds what its acknowledged sends name. */
export interface ContinuousProducer {
  readonly produced: readonly string[];
  /** Throws what made the producer fail, if it failed; probes call it so a failure is reported, not waited out. */
  check(): void;
  stop(): Promise<void>;
}

/**
 * Calls `send` round after round, `pauseMs` apart, until stop(); each round's names go to
 * `produced` once `send` resolves (its messages acknowledged). A failed send ends the
 * loop, and check() and stop() throw it as `what` failed.
 */
export function sendContinuously(what: string, send: (round: number) => Promise<readonly string[]>, pauseMs = 0): ContinuousProducer {
  const produced: string[] = [];
  let running = true;
  let failure: unknown;
  const loop = (async () => {
    for (let round = 0; running; round += 1) {
      produced.push(...(await send(round)));
      if (pauseMs > 0) await pause(pauseMs);
    }
  })().catch((error: unknown) => {
    failure = error;
  });
  return {
    produced,
    check() {
      if (failure !== undefined) throw new Error(`${what} failed`, { cause: failure });
    },
    async stop() {
      running = false;
      await loop;
      this.check();
    },
  };
}

const EVENTS_PER_SEND = 10;
// The publishing service's pace (200 events/s), not a wait for anything: every wait in
// the tests is on a condition.
const SEND_EVERY_MS = 50;

/** Another service publishing events to the topic at its pace until stop(); `produced` holds the ids of acknowledged sends. */
export function produceContinuously(producer: Producer, topic: string, base: Pick<CanonicalEvent, 'org_id' | 'project_id'>): ContinuousProducer {
  const firstAt = Date.parse('2026-03-01T00:00:00Z');
  return sendContinuously(
    'the event producer',
    async (round) => {
      // One millisecond apart, so the feed's order is the order of production.
      const events = Array.from({ length: EVENTS_PER_SEND }, (_, i) =>
        canonicalEvent({ ...base, occurred_at: new Date(firstAt + round * EVENTS_PER_SEND + i).toISOString() }),
      );
      await producer.send({
        topic,
        acks: -1,
        messages: events.map((e) => ({
          key: e.device_id ?? e.project_id,
          value: JSON.stringify(e),
          headers: { 'content-type': 'application/json', schema: 'canonical-event.schema.json', 'schema-version': '1' },
        })),
      });
      return events.map((e) => e.id);
    },
    SEND_EVERY_MS,
  );
}
