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

/**
 * The images of the testcontainers mode: the official ones by default, what a user with Docker
 * pulls; TEST_KAFKA_IMAGE and TEST_CLICKHOUSE_IMAGE pick others (scripts/containers-setup.sh
 * builds local stand-ins where no registry is reachable, and names them in its env file).
 */
export function containerImages(env: NodeJS.ProcessEnv = process.env): { kafka: string; clickhouse: string } {
  return {
    kafka: env['TEST_KAFKA_IMAGE'] || 'apache/kafka:4.3.1',
    clickhouse: env['TEST_CLICKHOUSE_IMAGE'] || 'clickhouse/clickhouse-server:25.8',
  };
}

/** The container engine, or one clear error: the testcontainers mode never falls back to another. */
async function containerRuntime() {
  const { getContainerRuntimeClient } = await import('testcontainers');
  try {
    return await getContainerRuntimeClient();
  } catch (error) {
    throw new Error(
      'TEST_INFRA=testcontainers needs a container engine with the Docker API (Docker, or podman through npm run containers:setup and DOCKER_HOST); none answered',
      { cause: error },
    );
  }
}

/** Labels every container this process starts, so one whose start failed half-way is still found and removed. */
const RUN_LABEL = { 'core-gateway.test': 'testcontainers', 'core-gateway.test-run': `${process.pid}-${Date.now()}` };

/**
 * Starts a container, and removes it when the start fails (a wait strategy timing out leaves a
 * running container behind otherwise, which testcontainers does not remove without Ryuk).
 */
async function startLabelled<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const client = await containerRuntime();
    const label = `core-gateway.test-run=${RUN_LABEL['core-gateway.test-run']}`;
    const left = await client.container.dockerode.listContainers({ all: true, filters: { label: [label] } });
    await Promise.allSettled(left.map((c) => client.container.dockerode.getContainer(c.Id).remove({ force: true, v: true })));
    throw error;
  }
}

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const { connect } = await import('node:net');
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => { socket.destroy(); resolve(true); });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nothing accepted connections on 127.0.0.1:${port} within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * A container the fault tests take down with a real SIGKILL of its processes and bring back
 * with its data (the container's own filesystem survives a stop), as the local mode does with
 * a process.
 */
function killableContainer(dockerode: { kill(o: { signal: string }): Promise<unknown>; start(): Promise<unknown>; wait(): Promise<unknown> }, ready: () => Promise<void>): ServerControl {
  return {
    async takeDown() {
      await dockerode.kill({ signal: 'SIGKILL' });
      await dockerode.wait();
    },
    async bringBack() {
      await dockerode.start();
      await ready();
    },
  };
}

async function startKafkaContainer(env: NodeJS.ProcessEnv): Promise<Pick<TestInfra, 'brokers' | 'broker' | 'stop'>> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const client = await containerRuntime();
  // The broker advertises the address clients reach it on, so it listens inside the container on
  // the very port mapped outside: 127.0.0.1:port is the broker on both sides of the mapping.
  const port = await freePort();
  const kafka = await startLabelled(() => new GenericContainer(containerImages(env).kafka)
    .withLabels(RUN_LABEL)
    .withEnvironment({
      KAFKA_NODE_ID: '1',
      KAFKA_PROCESS_ROLES: 'broker,controller',
      KAFKA_LISTENERS: `PLAINTEXT://:${port},CONTROLLER://127.0.0.1:9093`,
      KAFKA_ADVERTISED_LISTENERS: `PLAINTEXT://127.0.0.1:${port}`,
      KAFKA_CONTROLLER_LISTENER_NAMES: 'CONTROLLER',
      KAFKA_LISTENER_SECURITY_PROTOCOL_MAP: 'PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      KAFKA_CONTROLLER_QUORUM_VOTERS: '1@127.0.0.1:9093',
      KAFKA_NUM_PARTITIONS: '3',
      KAFKA_AUTO_CREATE_TOPICS_ENABLE: 'false',
      KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_OFFSETS_TOPIC_NUM_PARTITIONS: '10',
      KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR: '1',
      KAFKA_TRANSACTION_STATE_LOG_MIN_ISR: '1',
      KAFKA_TRANSACTION_STATE_LOG_NUM_PARTITIONS: '10',
      KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR: '1',
      KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR: '1',
      KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS: '0',
      // A killed broker registers again only once its old session expires (9 s by default).
      KAFKA_BROKER_SESSION_TIMEOUT_MS: '4000',
      KAFKA_BROKER_HEARTBEAT_INTERVAL_MS: '1000',
      KAFKA_HEAP_OPTS: '-Xms256m -Xmx512m',
    })
    // 9092 too, though nothing uses it: the images EXPOSE it, podman lists every exposed port
    // among the bindings, and testcontainers waits until each binding has a host port.
    .withExposedPorts({ container: port, host: port }, 9092)
    .withWaitStrategy(Wait.forLogMessage(/Kafka Server started/))
    .withStartupTimeout(120_000)
    .start());
  const container = client.container.getById(kafka.getId());
  return {
    brokers: [`127.0.0.1:${port}`],
    broker: killableContainer(container, () => waitForPort(port, 90_000)),
    stop: async () => void (await kafka.stop({ remove: true, removeVolumes: true })),
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

async function startClickHouseContainer(env: NodeJS.ProcessEnv): Promise<ClickHouseInfra> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const client = await containerRuntime();
  // A fixed mapping (a free port on both sides), so the server comes back on the same address
  // after the fault tests kill and restart its container.
  const port = await freePort();
  const clickhouse = await startLabelled(() => new GenericContainer(containerImages(env).clickhouse)
    .withLabels(RUN_LABEL)
    .withEnvironment({ CLICKHOUSE_USER: 'core', CLICKHOUSE_PASSWORD: 'core', CLICKHOUSE_DB: 'core' })
    .withExposedPorts({ container: 8123, host: port })
    .withWaitStrategy(Wait.forHttp('/ping', 8123).forStatusCode(200))
    .withStartupTimeout(120_000)
    .start());
  const container = client.container.getById(clickhouse.getId());
  const ready = async () => {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/ping`).then((r) => r.ok, () => false);
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`the ClickHouse container did not answer /ping on 127.0.0.1:${port} within 60 s`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const killable = killableContainer(container, ready);
  return {
    url: `http://core:core@127.0.0.1:${port}`,
    // A paused container is stalled: its connections stay open and nothing answers.
    server: { takeDown: () => killable.takeDown(), bringBack: () => killable.bringBack(), freeze: () => container.pause(), thaw: () => container.unpause() },
    stop: async () => void (await clickhouse.stop({ remove: true, removeVolumes: true })),
  };
}

/** The ClickHouse server of the suites. external needs CLICKHOUSE_URL: without it the server store cannot be tested, and that fails the run. */
export async function startClickHouseInfra(kind: InfraKind, env: NodeJS.ProcessEnv = process.env): Promise<ClickHouseInfra> {
  switch (kind) {
    case 'local':
      return startLocalClickHouse();
    case 'testcontainers':
      return startClickHouseContainer(env);
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
        return startKafkaContainer(env);
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
