import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, '..', '..');

export const INFRA_KINDS = ['local', 'testcontainers', 'external'] as const;
export type InfraKind = (typeof INFRA_KINDS)[number];

/** A broker the fault tests may take down and bring back. */
export interface BrokerControl {
  /** Makes the broker unavailable: a real kill (local) or a paused container. */
  takeDown(): Promise<void>;
  /** Brings it back with its data, and resolves once it accepts connections. */
  bringBack(): Promise<void>;
}

export interface TestInfra {
  readonly kind: InfraKind;
  readonly brokers: string[];
  /** A ClickHouse server when the infrastructure has one; otherwise the suite uses chDB. */
  readonly clickhouseUrl: string | undefined;
  /** Undefined for external infrastructure, which the tests do not own. */
  readonly broker: BrokerControl | undefined;
  stop(): Promise<void>;
}

async function dockerReachable(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

/**
 * TEST_INFRA picks the infrastructure: local (a broker from Maven artifacts, started by
 * scripts/kafka-start.sh), testcontainers (Kafka and ClickHouse in Docker) or external
 * (KAFKA_BROKERS and optionally CLICKHOUSE_URL). Unset means: external when
 * KAFKA_BROKERS is set, testcontainers when a Docker engine answers, local otherwise.
 */
export async function pickInfra(env: NodeJS.ProcessEnv = process.env): Promise<InfraKind> {
  const chosen = env['TEST_INFRA'];
  if (chosen !== undefined && chosen !== '') {
    if ((INFRA_KINDS as readonly string[]).includes(chosen)) return chosen as InfraKind;
    throw new Error(`TEST_INFRA must be one of ${INFRA_KINDS.join(', ')}; got "${chosen}"`);
  }
  if (env['KAFKA_BROKERS']) return 'external';
  return (await dockerReachable()) ? 'testcontainers' : 'local';
}

function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once('error', fail);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

async function script(name: string, env: Record<string, string>): Promise<void> {
  try {
    await run('bash', [join(repoRoot, 'scripts', name)], { env: { ...process.env, ...env }, maxBuffer: 10 * 1024 * 1024 });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    throw new Error(`scripts/${name} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
  }
}

async function startLocal(): Promise<TestInfra> {
  // Its own state directory and ports, so a developer's `npm run kafka:start` broker is left alone.
  const stateDir = mkdtempSync(join(tmpdir(), 'core-gateway-test-kafka-'));
  const env = {
    KAFKA_STATE_DIR: stateDir,
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
  };
  await script('kafka-start.sh', env);
  const brokerPid = () => Number(/^KAFKA_PID=(\d+)$/m.exec(readFileSync(join(stateDir, 'broker.env'), 'utf8'))?.[1]);
  return {
    kind: 'local',
    brokers: [`127.0.0.1:${env.KAFKA_PORT}`],
    clickhouseUrl: undefined,
    broker: {
      async takeDown() {
        const pid = brokerPid();
        process.kill(pid, 'SIGKILL');
        while (isAlive(pid)) await new Promise((r) => setTimeout(r, 50));
      },
      async bringBack() {
        await script('kafka-start.sh', { ...env, KAFKA_RESUME: '1' });
      },
    },
    async stop() {
      await script('kafka-stop.sh', env);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function startContainers(): Promise<TestInfra> {
  const { KafkaContainer } = await import('@testcontainers/kafka');
  const { ClickHouseContainer } = await import('@testcontainers/clickhouse');
  const { getContainerRuntimeClient } = await import('testcontainers');
  const [kafka, clickhouse] = await Promise.all([
    new KafkaContainer('confluentinc/cp-kafka:7.9.1').withKraft().start(),
    new ClickHouseContainer('clickhouse/clickhouse-server:25.8').start(),
  ]);
  const client = await getContainerRuntimeClient();
  const container = client.container.getById(kafka.getId());
  return {
    kind: 'testcontainers',
    brokers: [`${kafka.getHost()}:${kafka.getMappedPort(9093)}`],
    clickhouseUrl: clickhouse.getConnectionUrl(),
    broker: {
      takeDown: () => container.pause(),
      bringBack: () => container.unpause(),
    },
    async stop() {
      await Promise.all([kafka.stop(), clickhouse.stop()]);
    },
  };
}

export async function startInfra(kind: InfraKind, env: NodeJS.ProcessEnv = process.env): Promise<TestInfra> {
  switch (kind) {
    case 'local':
      return startLocal();
    case 'testcontainers':
      return startContainers();
    case 'external': {
      const brokers = env['KAFKA_BROKERS']?.split(',').map((s) => s.trim()).filter((s) => s !== '');
      if (brokers === undefined || brokers.length === 0) throw new Error('TEST_INFRA=external needs KAFKA_BROKERS');
      return { kind, brokers, clickhouseUrl: env['CLICKHOUSE_URL'] || undefined, broker: undefined, async stop() {} };
    }
  }
}
