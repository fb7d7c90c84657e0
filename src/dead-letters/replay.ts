import { createHash } from 'node:crypto';
import { Partitioners, type Kafka, type Message } from 'kafkajs';
import { whileConcurrent } from './concurrent-transactions.js';
import { readDeadLetter } from './dead-letter.js';
import { scopeOf, type LetterScope } from './letter-scope.js';
import type { Progress } from './progress.js';
import { rateLimit } from './rate-limit.js';
import { readToMarks } from './read-to-marks.js';
import { replayMessage, transformedValue, type Transforms } from './replay-message.js';
import { describeSelection, selects, type Selection } from './selection.js';
import { Tally, type Outcome } from './tally.js';

export interface ReplayOptions {
  readonly selection: Selection;
  readonly transforms: Transforms;
  /** Where letters go; undefined sends each back to its source topic. */
  readonly to: string | undefined;
  /** A letter replayed this many times already is not sent again. */
  readonly maxReplays: number;
  readonly ratePerSecond: number | undefined;
  /** Names the run's progress (its consumer group and transactional id); derived from the selection when undefined. */
  readonly run: string | undefined;
}

const GROUP_PREFIX = 'core-gateway-dlq-replay.';
/** Letters per transaction when no rate is set. */
const CHUNK = 500;

/**
 * The run's name when none is given: the selection, the target and the transforms, so
 * the same command resumes where it stopped while another selection starts a run of its
 * own over the whole topic (a run's committed offsets say nothing of letters it did not select).
 */
export function runName(options: Pick<ReplayOptions, 'selection' | 'transforms' | 'to' | 'run'>): string {
  if (options.run !== undefined) return options.run;
  const what = [describeSelection(options.selection), `to=${options.to ?? '(source)'}`, `strip-confluent-prefix=${options.transforms.stripConfluentPrefix}`].join(' ');
  return createHash('sha256').update(what).digest('hex').slice(0, 16);
}

export const replayGroup = (run: string) => `${GROUP_PREFIX}${run}`;

/**
 * Sends the selected letters of the dead-letter topic back, up to the topic's end when it
 * starts. Each chunk's sends and the group's offset after it are one Kafka transaction:
 * a crash anywhere leaves either all of a chunk done and its progress recorded, or none
 * of it, and the next run with the same name resumes from the last chunk committed.
 */
export async function replay(kafka: Kafka, deadLetterTopic: string, options: ReplayOptions, sessionTimeoutMs: number, progress: Progress): Promise<{ tally: Tally; group: string }> {
  const group = replayGroup(runName(options));
  const tally = new Tally();
  const pace = rateLimit(options.ratePerSecond);
  const chunkSize = options.ratePerSecond === undefined ? CHUNK : Math.max(1, Math.min(CHUNK, Math.floor(options.ratePerSecond)));
  // The transactional id is the run's: a second process of the same run fences the first,
  // and its start aborts whatever transaction a killed one left open.
  // Murmur2 on the key, as the Java client and our gateway place keyed messages: a replayed
  // message lands on the partition its key's other messages are on.
  const producer = kafka.producer({ transactionalId: group, idempotent: true, maxInFlightRequests: 1, createPartitioner: Partitioners.DefaultPartitioner });
  await producer.connect();
  try {
    await readToMarks({
      kafka,
      topic: deadLetterTopic,
      groupId: group,
      sessionTimeoutMs,
      chunkSize,
      handle: async (chunk) => {
        const outcomes: { letter: ReturnType<typeof readDeadLetter>; scope: LetterScope; outcome: Outcome }[] = [];
        const byTopic = new Map<string, Message[]>();
        for (const message of chunk.messages) {
          const letter = readDeadLetter(message);
          const scope = scopeOf(transformedValue(letter, options.transforms));
          let outcome: Outcome = 'not-selected';
          const target = options.to ?? letter.source?.topic;
          if (selects(options.selection, letter, scope)) {
            if (letter.truncated) outcome = 'truncated';
            else if (target === undefined) outcome = 'no-target';
            else if (letter.replayCount >= options.maxReplays) outcome = 'loop-guard';
            else outcome = 'sent';
          }
          if (outcome === 'sent' && target !== undefined) byTopic.set(target, [...(byTopic.get(target) ?? []), replayMessage(letter, options.transforms)]);
          outcomes.push({ letter, scope, outcome });
        }
        const sends = [...byTopic.values()].reduce((n, m) => n + m.length, 0);
        if (sends > 0) await pace(sends);
        const transaction = await producer.transaction();
        try {
          if (byTopic.size > 0) await whileConcurrent(() => transaction.sendBatch({ acks: -1, topicMessages: [...byTopic].map(([topic, messages]) => ({ topic, messages })) }));
          await whileConcurrent(() =>
            transaction.sendOffsets({ consumerGroupId: group, topics: [{ topic: deadLetterTopic, partitions: [{ partition: chunk.partition, offset: String(chunk.next) }] }] }),
          );
          await transaction.commit();
        } catch (error) {
          await transaction.abort().catch(() => undefined);
          throw error;
        }
        // Counted once committed, so the summary says what is in Kafka.
        for (const { letter, scope, outcome } of outcomes) tally.add(letter, scope, outcome);
        progress.update(tally);
      },
    });
  } finally {
    progress.done();
    await producer.disconnect();
  }
  return { tally, group };
}
