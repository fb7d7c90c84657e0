import { parseArgs } from 'node:util';
import type { ReplayOptions } from './replay.js';
import type { Transforms } from './replay-message.js';
import type { Selection } from './selection.js';

/** A command line the tool cannot run; main prints its message with the usage and exits 2. */
export class UsageError extends Error {
  constructor(problem: string) {
    super(problem);
    this.name = 'UsageError';
  }
}

/** Replays a letter at most this many times unless told otherwise: a fix that did not work shows in the loop guard's count. */
export const DEFAULT_MAX_REPLAYS = 3;

export type DlqCommand =
  | { readonly kind: 'help' }
  | { readonly kind: 'inspect'; readonly transforms: Transforms }
  | ({ readonly kind: 'replay' } & ReplayOptions);

export const USAGE = `usage: npm run dlq -- inspect [--strip-confluent-prefix]
       npm run dlq -- replay [selection] [--to TOPIC] [--strip-confluent-prefix]
                             [--max-replays N] [--rate N] [--run NAME]
selection (all given must match; none selects every letter):
  --reason R              dlq-reason, repeatable (invalid-json, schema-violation, ...)
  --since TIME            dead-lettered at or after TIME (ISO 8601)
  --until TIME            dead-lettered before TIME (ISO 8601)
  --source-topic T        read first from topic T
  --source-partition N    read first from partition N
  --source-offsets A-B    read first at an offset from A to B, both included
  --org ID, --project ID  the value's org_id / project_id (after the transforms)
Kafka settings and the dead-letter topic come from the gateway's variables
(KAFKA_BROKERS, KAFKA_SSL..., KAFKA_SASL..., EVENTS_DLQ_TOPIC).`;

const OPTIONS = {
  reason: { type: 'string', multiple: true },
  since: { type: 'string' },
  until: { type: 'string' },
  'source-topic': { type: 'string' },
  'source-partition': { type: 'string' },
  'source-offsets': { type: 'string' },
  org: { type: 'string' },
  project: { type: 'string' },
  to: { type: 'string' },
  'max-replays': { type: 'string' },
  rate: { type: 'string' },
  run: { type: 'string' },
  'strip-confluent-prefix': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

const TOPIC = /^[a-zA-Z0-9._-]{1,249}$/;

function time(option: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (!/^\d{4}-\d{2}-\d{2}/.test(value) || Number.isNaN(ms)) throw new UsageError(`--${option}: "${value}" is not an ISO 8601 time`);
  return ms;
}

function whole(option: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min) throw new UsageError(`--${option}: "${value}" is not a whole number of at least ${min}`);
  return n;
}

function topic(option: string, value: string | undefined): string | undefined {
  if (value !== undefined && !TOPIC.test(value)) throw new UsageError(`--${option}: "${value}" is not a Kafka topic name`);
  return value;
}

function offsets(value: string | undefined): Selection['sourceOffsets'] {
  if (value === undefined) return undefined;
  const match = /^(\d+)-(\d+)$/.exec(value);
  if (match === null) throw new UsageError(`--source-offsets: "${value}" is not FROM-TO`);
  const [from, to] = [BigInt(match[1]!), BigInt(match[2]!)];
  if (from > to) throw new UsageError(`--source-offsets: ${from} comes after ${to}`);
  return { from, to };
}

/** The command line after `dlq`, checked whole before anything connects. */
export function parseDlqArguments(args: readonly string[]): DlqCommand {
  let parsed;
  try {
    parsed = parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (values.help === true) return { kind: 'help' };
  if (positionals.length !== 1) throw new UsageError('name one command: inspect or replay');
  const transforms: Transforms = { stripConfluentPrefix: values['strip-confluent-prefix'] === true };
  const [command] = positionals;
  if (command === 'inspect') {
    const extra = Object.keys(values).filter((name) => name !== 'strip-confluent-prefix');
    if (extra.length > 0) throw new UsageError(`inspect reads every letter and takes no --${extra[0]}`);
    return { kind: 'inspect', transforms };
  }
  if (command !== 'replay') throw new UsageError(`unknown command "${command}": inspect or replay`);
  const sinceMs = time('since', values.since);
  const untilMs = time('until', values.until);
  if (sinceMs !== undefined && untilMs !== undefined && sinceMs >= untilMs) throw new UsageError('--since must come before --until');
  const reasons = values.reason;
  return {
    kind: 'replay',
    selection: {
      reasons: reasons === undefined ? undefined : [...new Set(reasons)],
      sinceMs,
      untilMs,
      sourceTopic: topic('source-topic', values['source-topic']),
      sourcePartition: whole('source-partition', values['source-partition'], 0),
      sourceOffsets: offsets(values['source-offsets']),
      org: values.org,
      project: values.project,
    },
    transforms,
    to: topic('to', values.to),
    maxReplays: whole('max-replays', values['max-replays'], 1) ?? DEFAULT_MAX_REPLAYS,
    ratePerSecond: whole('rate', values.rate, 1),
    run: values.run === undefined ? undefined : (topic('run', values.run) ?? values.run),
  };
}
