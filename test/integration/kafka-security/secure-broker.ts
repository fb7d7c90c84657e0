import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Kafka, logLevel } from 'kafkajs';
import { startClickHouseServer, type ClickHouseServerHandle } from '../../support/clickhouse-server.js';
import { freePort, isAlive, repoRoot, runScript, stateValue } from '../../support/processes.js';

const run = promisify(execFile);

/** Users the broker knows besides admin, each with a password of its own. */
export const USERS = ['client', 'gateway', 'consumer', 'all', 'rotating'] as const;
export type User = (typeof USERS)[number] | 'admin';

/**
 * A single-node broker whose only client listener is SASL_SSL, with ACLs on, that requires
 * a client certificate of its CA from every client (scripts/kafka-security-lib.sh).
 */
export interface SecureBroker {
  /** 127.0.0.1:port; the certificate names 127.0.0.1 only, so localhost:port is a host name mismatch. */
  readonly bootstrap: string;
  readonly port: number;
  /** The throw-away CA that signed the broker's certificate. */
  readonly caFile: string;
  /** A client certificate of that CA and its key. */
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
  readonly securityDir: string;
  passwordFile(user: User): string;
  password(user: User): string;
  /** A client of the super user admin, for setting up topics and ACLs. */
  readonly admin: Kafka;
  /** Sets a user's SCRAM-SHA-512 password on the running broker (existing connections keep theirs). */
  setPassword(user: User, password: string): Promise<void>;
  /** Stops the broker cleanly and starts it again on its data, so every client connects anew. */
  restart(): Promise<void>;
}

let broker: (SecureBroker & { stop(): Promise<void> }) | undefined;
let clickhouse: ClickHouseServerHandle | undefined;

export function secureBroker(): SecureBroker {
  if (broker === undefined) throw new Error('the secure broker is not running: load secure-broker.ts with --require');
  return broker;
}

/** One ClickHouse server for the tests that run split roles (they need one); started on first use. */
export async function sharedClickHouse(): Promise<ClickHouseServerHandle> {
  clickhouse ??= await startClickHouseServer();
  return clickhouse;
}

/** Gateway settings for the broker over TLS, trusting the test CA, with a client certificate; no SASL yet. */
export function secureTlsEnv() {
  const b = secureBroker();
  return { KAFKA_BROKERS: b.bootstrap, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: b.caFile, KAFKA_SSL_CERT_FILE: b.clientCertFile, KAFKA_SSL_KEY_FILE: b.clientKeyFile };
}

/** Gateway settings for SASL_SSL as `user`, trusting the test CA. */
export function secureKafkaEnv(user: User, mechanism = 'scram-sha-512') {
  const b = secureBroker();
  return {
    ...secureTlsEnv(),
    KAFKA_SASL_MECHANISM: mechanism,
    KAFKA_SASL_USERNAME: user,
    KAFKA_SASL_PASSWORD_FILE: b.passwordFile(user),
  };
}

function kafkaLibs(): string {
  const pom = readFileSync(join(repoRoot, 'test', 'infra', 'kafka', 'pom.xml'), 'utf8');
  const version = process.env['KAFKA_VERSION'] ?? /<kafka\.version>([^<]+)<\/kafka\.version>/.exec(pom)?.[1];
  const cache = process.env['KAFKA_CACHE_DIR'] ?? join(homedir(), '.cache', 'core-gateway', 'kafka');
  return join(cache, `libs-${version}`, '*');
}

async function startSecureBroker(): Promise<SecureBroker & { stop(): Promise<void> }> {
  // State of its own, so a developer's broker (and the plain Kafka suite's) is left alone.
  const stateDir = mkdtempSync(join(tmpdir(), 'core-gateway-test-kafka-security-'));
  const port = await freePort();
  const env = {
    KAFKA_STATE_DIR: stateDir,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    KAFKA_NODES: '1',
    KAFKA_SECURITY: 'sasl_ssl',
    KAFKA_ACLS: 'true',
    KAFKA_SASL_USERS: USERS.join(','),
    KAFKA_SSL_CERT_NAMES: '127.0.0.1',
    KAFKA_OAUTHBEARER_UNSECURED: 'true',
    KAFKA_SSL_CLIENT_AUTH: 'required',
  };
  try {
    await runScript('kafka-start.sh', env);
  } catch (error) {
    rmSync(stateDir, { recursive: true, force: true });
    throw error;
  }
  const securityDir = join(stateDir, 'security');
  const bootstrap = `127.0.0.1:${port}`;
  const caFile = join(securityDir, 'ca.pem');
  const clientCertFile = join(securityDir, 'client-cert.pem');
  const clientKeyFile = join(securityDir, 'client-key.pem');
  const passwordFile = (user: User) => join(securityDir, 'users', `${user}.password`);
  const password = (user: User) => readFileSync(passwordFile(user), 'utf8').trim();
  const admin = new Kafka({
    clientId: 'kafka-security-test-admin',
    brokers: [bootstrap],
    ssl: { ca: readFileSync(caFile, 'utf8'), cert: readFileSync(clientCertFile, 'utf8'), key: readFileSync(clientKeyFile, 'utf8') },
    sasl: { mechanism: 'scram-sha-512', username: 'admin', password: password('admin') },
    logLevel: logLevel.NOTHING,
  });
  // The Java tool reaches the broker as admin over SASL_SSL, like any client.
  const adminProperties = join(securityDir, 'admin-client.properties');
  // Kafka's PEM keystore: the key and then the certificate, in one file.
  const adminKeystore = join(securityDir, 'admin-client-keystore.pem');
  writeFileSync(adminKeystore, readFileSync(clientKeyFile, 'utf8') + readFileSync(clientCertFile, 'utf8'), { mode: 0o600 });
  writeFileSync(
    adminProperties,
    [
      'security.protocol=SASL_SSL',
      'sasl.mechanism=SCRAM-SHA-512',
      `sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="${password('admin')}";`,
      'ssl.truststore.type=PEM',
      `ssl.truststore.location=${caFile}`,
      'ssl.keystore.type=PEM',
      `ssl.keystore.location=${adminKeystore}`,
    ].join('\n'),
    { mode: 0o600 },
  );
  return {
    bootstrap,
    port,
    caFile,
    clientCertFile,
    clientKeyFile,
    securityDir,
    passwordFile,
    password,
    admin,
    async setPassword(user, newPassword) {
      const java = process.env['JAVA_HOME'] ? join(process.env['JAVA_HOME'], 'bin', 'java') : 'java';
      await run(
        java,
        [
          '-cp',
          kafkaLibs(),
          'kafka.admin.ConfigCommand',
          '--bootstrap-server',
          bootstrap,
          '--command-config',
          adminProperties,
          '--alter',
          '--entity-type',
          'users',
          '--entity-name',
          user,
          '--add-config',
          `SCRAM-SHA-512=[iterations=4096,password=${newPassword}]`,
        ],
        { maxBuffer: 10 * 1024 * 1024 },
      );
    },
    async restart() {
      const pid = Number(stateValue(join(stateDir, 'broker.env'), 'KAFKA_PID'));
      process.kill(pid, 'SIGTERM');
      while (isAlive(pid)) await new Promise((r) => setTimeout(r, 100));
      await runScript('kafka-start.sh', { ...env, KAFKA_RESUME: '1' });
    },
    async stop() {
      await runScript('kafka-stop.sh', env);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

/** Root hooks, loaded with --require: one secured broker for the run. */
export const mochaHooks = {
  async beforeAll(this: Mocha.Context): Promise<void> {
    this.timeout(300_000);
    broker = await startSecureBroker();
    console.log(`      Kafka security suite: SASL_SSL broker on ${broker.bootstrap}, ACLs on, client certificates required`);
  },
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(120_000);
    try {
      await clickhouse?.stop();
    } finally {
      await broker?.stop();
    }
  },
};
