import { spawn } from 'node:child_process';
import { resolve } from 'node:path';

const script = resolve(import.meta.dirname, 'java', 'field-producer.sh');

export const JAVA_CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;
export type JavaCodec = (typeof JAVA_CODECS)[number];

/** One message for the Java producer; null key or value as Kafka has them (a null value is a tombstone). */
export interface FieldMessage {
  readonly key: Buffer | string | null;
  readonly value: Buffer | string | null;
  readonly headers?: Readonly<Record<string, Buffer | string>>;
  /** Left to the client's partitioner when absent. */
  readonly partition?: number;
  /** The record's timestamp (ms); the client's clock when absent. */
  readonly timestamp?: number;
}

/** Ends the open transaction (only with a transaction mode). */
export interface TransactionEnd {
  readonly end: 'commit' | 'abort';
}

export interface FieldProducerOptions {
  readonly brokers: readonly string[];
  readonly topic: string;
  readonly compression: JavaCodec;
  readonly idempotence?: boolean;
  readonly lingerMs?: number;
  readonly batchSize?: number;
  readonly maxRequestSize?: number;
  /** none: plain sends; committed or aborted: in transactions, the last one ending that way. */
  readonly transaction?: 'none' | 'committed' | 'aborted';
}

/** Where a message landed and whether its transaction was committed (plain: no transaction). */
export interface Placement {
  readonly index: number;
  readonly partition: number;
  readonly offset: bigint;
  readonly fate: 'plain' | 'committed' | 'aborted';
}

const b64 = (bytes: Buffer | string | null): string => (bytes === null ? '-' : Buffer.from(bytes).toString('base64'));

function line(m: FieldMessage): string {
  const headers = Object.entries(m.headers ?? {});
  return [
    b64(m.key),
    b64(m.value),
    headers.length === 0 ? '-' : headers.map(([name, value]) => `${b64(name)}:${b64(value)}`).join(','),
    m.partition ?? '-',
    m.timestamp ?? '-',
  ].join('\t');
}

/**
 * Produces the messages with the Kafka Java client (test/support/java/FieldProducer.java),
 * as a service on the Java client would, and answers where each landed, in input order.
 * Throws, with the producer's own words, when java or the broker's jars are missing or any
 * message was not acknowledged: a test that needs it fails, never skips.
 */
export async function produceWithJava(options: FieldProducerOptions, input: readonly (FieldMessage | TransactionEnd)[]): Promise<Placement[]> {
  const args = [
    script,
    '--bootstrap-server', options.brokers.join(','),
    '--topic', options.topic,
    '--compression', options.compression,
    '--idempotence', String(options.idempotence ?? true),
    '--linger-ms', String(options.lingerMs ?? 20),
    '--batch-size', String(options.batchSize ?? 256 * 1024),
    '--transaction', options.transaction ?? 'none',
  ];
  if (options.maxRequestSize !== undefined) args.push('--max-request-size', String(options.maxRequestSize));
  const expected = input.filter((i) => !('end' in i)).length;
  const child = spawn('bash', args, { stdio: ['pipe', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
  child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
  const exited = new Promise<number | null>((done, fail) => {
    child.on('error', fail);
    child.on('close', (code) => done(code));
  });
  // A producer that dies early closes its stdin; the exit code below says why.
  child.stdin.on('error', () => undefined);
  child.stdin.end(input.map((i) => ('end' in i ? i.end : line(i))).join('\n') + '\n');
  const code = await exited;
  const stderr = Buffer.concat(err).toString('utf8').split('\n').slice(-20).join('\n');
  if (code !== 0) throw new Error(`the Java producer (${options.compression}, transaction ${options.transaction ?? 'none'}) exited ${String(code)}:\n${stderr}`);
  const placements: Placement[] = [];
  for (const row of Buffer.concat(out).toString('utf8').split('\n')) {
    const m = /^sent\t(\d+)\t(\d+)\t(\d+)\t(plain|committed|aborted)$/.exec(row);
    if (m === null) continue;
    placements.push({ index: Number(m[1]), partition: Number(m[2]), offset: BigInt(m[3]!), fate: m[4] as Placement['fate'] });
  }
  if (placements.length !== expected) throw new Error(`the Java producer answered for ${placements.length} of ${expected} messages:\n${stderr}`);
  return placements.sort((a, b) => a.index - b.index);
}
