import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { Message } from 'kafkajs';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { committedOffsets, type ReceivedMessage } from '../../support/kafka-topics.js';
import { waitFor } from '../../support/wait-for.js';
import { repoRoot } from '../../support/processes.js';
import { topicReader, type KafkaSuite } from './kafka-suite.js';

export interface ToolRun {
  readonly child: ChildProcess;
  /** Resolves when the process exits, with its exit code (null when killed) and its output. */
  readonly exited: Promise<{ code: number | null; stdout: string; stderr: string }>;
}

/** The dead-letter command as an operator runs it: a process of its own, on the suite's broker and DLQ. */
export function runDlq(s: KafkaSuite, args: readonly string[]): ToolRun {
  const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'src', 'dead-letters', 'main.ts'), ...args], {
    cwd: repoRoot,
    env: {
      ...process.env,
      KAFKA_BROKERS: s.infra.brokers.join(','),
      EVENTS_DLQ_TOPIC: s.topics.deadLetter,
      // A killed run's member leaves the group when its session ends; the next run joins after that.
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
  return { child, exited };
}

/** Runs the command to its end and returns what it printed; a non-zero exit fails with its output. */
export async function dlq(s: KafkaSuite, args: readonly string[]): Promise<string> {
  const { code, stdout, stderr } = await runDlq(s, args).exited;
  if (code !== 0) throw new Error(`dlq ${args.join(' ')} exited ${code}:\n${stdout}${stderr}`);
  return stdout;
}

/** An event as a producer with Confluent's schema-registry serializer sends it: magic byte 0, a schema id, then the JSON. */
export function confluentFramed(event: CanonicalEvent, schemaId = 42): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(schemaId, 1);
  return Buffer.concat([prefix, Buffer.from(JSON.stringify(event))]);
}

/** Produces `messages` to the suite's events topic, a thousand to a request, acknowledged by all replicas. */
export async function produceEvents(s: KafkaSuite, messages: readonly Message[]): Promise<void> {
  const producer = s.kafka.producer();
  await producer.connect();
  try {
    for (let i = 0; i < messages.length; i += 1000) {
      await producer.send({ topic: s.topics.events, acks: -1, messages: messages.slice(i, i + 1000) });
    }
  } finally {
    await producer.disconnect();
  }
}

/**
 * Every committed message of the events topic up to a sentinel sent now with `key` (so on
 * the partition the key's messages are on): once a reader of committed data has it, it has
 * everything before it there. Reading to the high watermark would not end on a topic
 * written in transactions, whose last record is a marker no reader receives.
 */
export async function eventsThroughSentinel(s: KafkaSuite, key: string): Promise<{ messages: ReceivedMessage[]; sentinel: ReceivedMessage }> {
  const reader = await topicReader([s.topics.events]);
  try {
    const sentinel = uuid();
    await produceEvents(s, [{ key, value: JSON.stringify(canonicalEvent()), headers: { sentinel } }]);
    const [found] = await reader.waitFor('the sentinel', (m) => m.headers['sentinel'] === sentinel, 1, 60_000);
    return { messages: reader.messages.filter((m) => m.key === key && m.headers['sentinel'] === undefined), sentinel: found! };
  } finally {
    await reader.stop();
  }
}

/** Waits until the suite's ingest consumer has committed past `message`, so all before it on its partition is stored. */
export async function ingestedThrough(s: KafkaSuite, message: ReceivedMessage): Promise<void> {
  await waitFor('the ingest consumer past the sentinel', async () =>
    ((await committedOffsets(s.kafka, s.consumerGroup, message.topic)).get(message.partition) ?? -1n) > BigInt(message.offset) ? true : undefined, 60_000, 200);
}
