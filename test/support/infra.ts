import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startClickHouseServer } from './clickhouse-server.js';
import { freePort, isAlive, runScript, stateValue } from './processes.js';

export const INFRA_KINDS = ['local', 'testcontainers', 'external'] as const;
export type InfraKind = (typeof INFRA_KINDS)[number];

/** A server the fault tests may take down and bring back. */
export interface ServerControl {
  /** Makes it unavailable: a real SIGKILL (local) or a paused container. */
  takeDown(): Promise<void>;
  /** Brings it back with its data, and resolves once it accepts connections. */
  bringBack(): Promise<void>;
}

/** The ClickHouse server can also stall: connected, but answering nothing. */
export interface StoreServerControl extends ServerControl {
  freeze(): Promise<void>;
  thaw(): Promise<void>;
}

export interface ClickHouseInfra {
  readonly url: string;
  /** Undefined for external infrastructure, which the tests do not own. */
  readonly server: StoreServerControl | undefined;
  stop(): Promise<void>;
}

export interface TestInfra {
  readonly kind: InfraKind;
  readonly brokers: string[];
  /** Undefined for external infrastructure, which the tests do not own. */
  readonly broker: ServerControl | undefined;
  /** Undefined only where no store under test needs a server (TEST_STORES=chdb). */
  readonly clickhouse: ClickHouseInfra | undefined;
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
 * TEST_INFRA picks the infrastructure: local (a broker from Maven artifacts and a ClickHouse
 * server from the installed engine library, started by scripts/), testcontainers (Kafka and
 * ClickHouse in Docker) or external (KAFKA_BROKERS and CLICKHOUSE_URL). Unset means:
 * external when KAFKA_BROKERS is set, testcontainers when a Docker engine answers, local otherwise.
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

async function startLocalKafka(): Promise<Pick<TestInfra, 'brokers' | 'broker' | 'stop'>> {
  // Its own state directory and ports, so a developer's `npm run kafka:start` broker is left alone.
  const stateDir = mkdtempSync(join(tmpdir(), 'core-gateway-test-kafka-'));
  const env = {
    KAFKA_STATE_DIR: stateDir,
    KAFKA_PORT: String(await freePort()),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
  };
  await runScript('kafka-start.sh', env);
  const brokerPid = () => Number(stateValue(join(stateDir, 'broker.env'), 'KAFKA_PID'));
  return {
    brokers: [`127.0.0.1:${env.KAFKA_PORT}`],
    broker: {
      async takeDown() {
        const pid = brokerPid();
        process.kill(pid, 'SIGKILL');
        while (isAlive(pid)) await new Promise((r) => setTimeout(r, 50));
      },
      async bringBack() {
        await runScript('kafka-start.sh', { ...env, KAFKA_RESUME: '1' });
      },
    },
    async stop() {
      await runScript('kafka-stop.sh', env);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

async function startKafkaContainer(): Promise<Pick<TestInfra, 'brokers' | 'broker' | 'stop'>> {
  const { KafkaContainer } = await import('@testcontainers/kafka');
  const { getContainerRuntimeClient } = await import('testcontainers');
  const kafka = await new KafkaContainer('confluentinc/cp-kafka:7.9.1').withKraft().start();
  const container = (await getContainerRuntimeClient()).container.getById(kafka.getId());
  return {
    brokers: [`${kafka.getHost()}:${kafka.getMappedPort(9093)}`],
    broker: { takeDown: () => container.pause(), bringBack: () => container.unpause() },
    stop: async () => void (await kafka.stop()),
  };
}

async function startLocalClickHouse(): Promise<ClickHouseInfra> {
  const server = await startClickHouseServer();
  return {
    url: server.url,
    server: { takeDown: () => server.kill(), bringBack: () => server.resume(), freeze: () => server.freeze(), thaw: () => server.thaw() },
    stop: () => server.stop(),
  };
}

async function startClickHouseContainer(): Promise<ClickHouseInfra> {
  const { ClickHouseContainer } = await import('@testcontainers/clickhouse');
  const { getContainerRuntimeClient } = await import('testcontainers');
  const clickhouse = await new ClickHouseContainer('clickhouse/clickhouse-server:25.8').start();
  const container = (await getContainerRuntimeClient()).container.getById(clickhouse.getId());
  // A paused container is both down and stalled: its connections stay open and nothing answers.
  const pause = () => container.pause();
  const unpause = () => container.unpause();
  return {
    url: clickhouse.getConnectionUrl(),
    server: { takeDown: pause, bringBack: unpause, freeze: pause, thaw: unpause },
    stop: async () => void (await clickhouse.stop()),
  };
}

/** The ClickHouse server of the suites. external needs CLICKHOUSE_URL: without it the server store cannot be tested, and that fails the run. */
export async function startClickHouseInfra(kind: InfraKind, env: NodeJS.ProcessEnv = process.env): Promise<ClickHouseInfra> {
  switch (kind) {
    case 'local':
      return startLocalClickHouse();
    case 'testcontainers':
      return startClickHouseContainer();
    case 'external': {
      const url = env['CLICKHOUSE_URL'];
      if (!url) throw new Error('TEST_INFRA=external needs CLICKHOUSE_URL for the clickhouse-server store (or TEST_STORES=chdb to leave it out)');
      return { url, server: undefined, async stop() {} };
    }
  }
}

/** Kafka and, when `withClickHouse`, the ClickHouse server. */
export async function startInfra(kind: InfraKind, options: { withClickHouse: boolean }, env: NodeJS.ProcessEnv = process.env): Promise<TestInfra> {
  const kafka = await (async () => {
    switch (kind) {
      case 'local':
        return startLocalKafka();
      case 'testcontainers':
        return startKafkaContainer();
      case 'external': {
        const brokers = env['KAFKA_BROKERS']?.split(',').map((s) => s.trim()).filter((s) => s !== '');
        if (brokers === undefined || brokers.length === 0) throw new Error('TEST_INFRA=external needs KAFKA_BROKERS');
        return { brokers, broker: undefined, async stop() {} };
      }
    }
  })();
  let clickhouse: ClickHouseInfra | undefined;
  try {
    clickhouse = options.withClickHouse ? await startClickHouseInfra(kind, env) : undefined;
  } catch (error) {
    await kafka.stop();
    throw error;
  }
  return {
    kind,
    brokers: kafka.brokers,
    broker: kafka.broker,
    clickhouse,
    async stop() {
      try {
        await clickhouse?.stop();
      } finally {
        await kafka.stop();
      }
    },
  };
}
