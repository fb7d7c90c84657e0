import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const script = resolve(import.meta.dirname, '..', '..', 'scripts', 'kafka-probe.sh');

export interface ProbedPartition {
  readonly topic: string;
  readonly partition: number;
  readonly lastStableOffset: number;
  readonly highWatermark: number;
  readonly blocked: boolean;
  readonly openTransactions: readonly { producerId: number; startOffset: number; ageMs: number; coordinatorState: string }[];
}

export interface ProbeReport {
  readonly thresholdMs: number;
  readonly blocked: number;
  readonly lagging: number;
  readonly partitions: readonly ProbedPartition[];
  readonly stuckTransactions: readonly { transactionalId: string; ageMs: number }[];
}

/** Runs the operator's hanging-transaction probe (scripts/kafka-probe.sh) and reads its JSON report. */
export async function probeTransactions(broker: string, topics: readonly string[], olderThanMs?: number): Promise<ProbeReport> {
  const args = [script, '--bootstrap-server', broker, '--topics', topics.join(','), '--json'];
  if (olderThanMs !== undefined) args.push('--older-than-ms', String(olderThanMs));
  try {
    const { stdout } = await run('bash', args, { maxBuffer: 10 * 1024 * 1024 });
    return JSON.parse(stdout) as ProbeReport;
  } catch (error) {
    // Exit 1 is the probe's verdict "something is blocked", with its report on stdout.
    const e = error as { code?: number; stdout?: string; stderr?: string };
    if (e.code === 1 && e.stdout) return JSON.parse(e.stdout) as ProbeReport;
    throw new Error(`kafka-probe failed: ${e.stderr ?? String(error)}`, { cause: error });
  }
}
