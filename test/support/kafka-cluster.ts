import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Admin, Kafka } from 'kafkajs';
import { freePort, repoRoot } from './processes.js';
import { waitFor } from './wait-for.js';

const run = promisify(execFile);

/**
 * A KRaft cluster on loopback started by scripts/kafka-start.sh with KAFKA_NODES, whose
 * nodes the tests crash (scripts/kafka-kill.sh) and bring back (scripts/kafka-resume.sh).
 * Nodes are 0-based, as the scripts count them; node i has Kafka node id i + 1.
 */
export interface LocalKafkaCluster {
  /** host:port of every node, node 0 first. */
  readonly brokers: readonly string[];
  readonly size: number;
  /** SIGKILLs node `index`; resolves once the process is gone. */
  kill(index: number): Promise<void>;
  /** Restarts node `index` on its data; resolves once it is ready. */
  resume(index: number): Promise<void>;
  /** Restarts every node that is down. */
  resumeAll(): Promise<void>;
  stop(): Promise<void>;
}

export const nodeIdOf = (index: number): number => index + 1;
export const indexOfNodeId = (nodeId: number): number => nodeId - 1;

async function script(name: string, args: readonly string[], env: Record<string, string>): Promise<string> {
  try {
    const { stdout } = await run('bash', [join(repoRoot, 'scripts', name), ...args], { env: { ...process.env, ...env }, maxBuffer: 10 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    throw new Error(`scripts/${name} ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
  }
}

/** Starts a cluster of `size` nodes with its own state dir and free ports; fails with the script's output if it cannot. */
export async function startLocalKafkaCluster(size: number): Promise<LocalKafkaCluster> {
  const stateDir = mkdtempSync(join(tmpdir(), 'core-gateway-test-kafka-cluster-'));
  // Client ports first, controller ports right after, all below the ephemeral range (see freePort).
  const base = await freePort(2 * size);
  const env = { KAFKA_STATE_DIR: stateDir, KAFKA_NODES: String(size), KAFKA_PORT: String(base), KAFKA_CONTROLLER_PORT: String(base + size) };
  try {
    await script('kafka-start.sh', [], env);
  } catch (error) {
    // A half-started cluster is stopped, so a failed start leaves no JVM behind.
    await script('kafka-stop.sh', [], env).catch(() => undefined);
    rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }
  return {
    brokers: Array.from({ length: size }, (_, i) => `127.0.0.1:${base + i}`),
    size,
    async kill(index) {
      await script('kafka-kill.sh', [String(index)], env);
    },
    async resume(index) {
      await script('kafka-resume.sh', [String(index)], env);
    },
    async resumeAll() {
      await script('kafka-resume.sh', [], env);
    },
    async stop() {
      await script('kafka-stop.sh', [], env);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** Runs `body` with a connected admin client of `kafka`, and disconnects it. */
export async function withAdmin<T>(kafka: Kafka, body: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await body(admin);
  } finally {
    await admin.disconnect();
  }
}

export interface PartitionState {
  readonly topic: string;
  readonly partition: number;
  /** Kafka node id, -1 while the partition has none. */
  readonly leader: number;
  readonly replicas: readonly number[];
  readonly isr: readonly number[];
}

export async function partitionStates(kafka: Kafka, topics: readonly string[]): Promise<PartitionState[]> {
  return withAdmin(kafka, async (admin) => {
    const metadata = await admin.fetchTopicMetadata({ topics: [...topics] });
    return metadata.topics.flatMap((t) =>
      t.partitions.map((p) => ({ topic: t.name, partition: p.partitionId, leader: p.leader, replicas: p.replicas, isr: p.isr })),
    );
  });
}

/** The node (0-based) that leads the most partitions of `topics`, and how many it leads. */
export async function busiestLeader(kafka: Kafka, topics: readonly string[]): Promise<{ index: number; partitions: number }> {
  const counts = new Map<number, number>();
  for (const p of await partitionStates(kafka, topics)) if (p.leader >= 0) counts.set(p.leader, (counts.get(p.leader) ?? 0) + 1);
  const [nodeId, partitions] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? [-1, 0];
  if (nodeId < 0) throw new Error(`no partition of ${topics.join(', ')} has a leader`);
  return { index: indexOfNodeId(nodeId), partitions };
}

/**
 * Waits until every partition of `topics` (and of the consumer offsets, which commits and
 * group coordination need) has a leader and all `replicas` in sync: after a node's return
 * the cluster is whole again, so the next kill takes one replica away, not a second one.
 */
export async function waitForFullIsr(kafka: Kafka, topics: readonly string[], replicas: number, timeoutMs = 120_000): Promise<void> {
  let lagging: PartitionState[] = [];
  await waitFor(
    `every partition of ${topics.join(', ')} and __consumer_offsets with ${replicas} replicas in sync`,
    async () => {
      lagging = (await partitionStates(kafka, [...topics, '__consumer_offsets'])).filter((p) => p.leader < 0 || p.isr.length < replicas);
      return lagging.length === 0 ? true : undefined;
    },
    timeoutMs,
    250,
  ).catch((error: unknown) => {
    throw new Error(`${(error as Error).message}; still short: ${JSON.stringify(lagging.slice(0, 5))}`, { cause: error });
  });
}

/** Java's String.hashCode, which Kafka uses to place a group on a partition of __consumer_offsets. */
function javaStringHash(value: string): number {
  let hash = 0;
  for (let i = 0; i < value.length; i += 1) hash = (Math.imul(hash, 31) + value.charCodeAt(i)) | 0;
  return hash;
}

/**
 * The node (0-based) that coordinates `groupId`: the leader of the __consumer_offsets
 * partition the group hashes to (Kafka's `Utils.abs(groupId.hashCode()) % partitions`).
 * kafkajs's admin client does not expose FindCoordinator.
 */
export async function groupCoordinator(kafka: Kafka, groupId: string): Promise<number> {
  const offsets = await partitionStates(kafka, ['__consumer_offsets']);
  const partition = (javaStringHash(groupId) & 0x7fffffff) % offsets.length;
  const leader = offsets.find((p) => p.partition === partition)?.leader ?? -1;
  if (leader < 0) throw new Error(`__consumer_offsets partition ${partition} (group ${groupId}) has no leader`);
  return indexOfNodeId(leader);
}
