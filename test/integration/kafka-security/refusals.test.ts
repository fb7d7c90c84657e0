import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../../src/config/config.js';
import { createApp } from '../../../src/http/app.js';
import { createKafkaReadiness } from '../../../src/kafka/kafka-readiness.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createGatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { startGatewayProcess, type GatewayProcess } from '../../support/gateway-process.js';
import { waitFor } from '../../support/wait-for.js';
import { grantPrefix } from './acls.js';
import { runGatewayToExit } from './gateway-exit.js';
import { deployment, readyz } from './helpers.js';
import { secureBroker, secureKafkaEnv } from './secure-broker.js';

const PREFIX = 'refusals.';
/** A CA that signed nothing the broker has (test/fixtures/tls). */
const OTHER_CA = resolve(import.meta.dirname, '..', '..', 'fixtures', 'tls', 'ca.pem');
const AUTH_JWT_SECRET = randomBytes(32).toString('hex');

interface Refusal {
  readonly cause: string;
  /** Settings over a correct SCRAM-SHA-512 login as `client`. */
  env(scratch: string): Record<string, string>;
  /** The reason as the start line and /readyz give it. */
  readonly reason: string;
}

/** The retry counts above 0 in kafkajs's log lines: a connection retried by kafkajs shows 1, 2, ... */
function kafkaRetries(output: string): number[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { module?: string; retryCount?: unknown })
    .flatMap((entry) => (entry.module === 'kafkajs' && typeof entry.retryCount === 'number' && entry.retryCount > 0 ? [entry.retryCount] : []));
}

const WRONG_PASSWORD = `wrong-${randomBytes(8).toString('hex')}`;

const REFUSALS: readonly Refusal[] = [
  {
    cause: 'a wrong password',
    env: (scratch) => {
      const file = join(scratch, 'wrong-password');
      writeFileSync(file, `${WRONG_PASSWORD}\n`);
      return { KAFKA_SASL_PASSWORD_FILE: file };
    },
    reason: 'authentication failed: the brokers refused the SCRAM-SHA-512 credentials (check KAFKA_SASL_USERNAME and the password)',
  },
  {
    cause: 'a CA that did not sign the broker certificate',
    env: () => ({ KAFKA_SSL_CA_FILE: OTHER_CA }),
    reason: "TLS: certificate not trusted: the broker's certificate is not signed by a CA in KAFKA_SSL_CA_FILE",
  },
  {
    cause: 'a host name the broker certificate does not name',
    // The test broker's certificate names 127.0.0.1 only; localhost reaches the same listener.
    env: () => ({ KAFKA_BROKERS: `localhost:${secureBroker().port}` }),
    reason: `TLS: host name mismatch: the broker's certificate does not name "localhost"`,
  },
  {
    cause: 'no client certificate for a broker that requires one',
    env: () => ({ KAFKA_SSL_CERT_FILE: '', KAFKA_SSL_KEY_FILE: '' }),
    reason: 'TLS: the broker requires a client certificate (KAFKA_SSL_CERT_FILE, KAFKA_SSL_KEY_FILE)',
  },
];

describe('a broker that refuses the gateway', function () {
  this.timeout(120_000);
  const scratch = mkdtempSync(join(tmpdir(), 'core-gateway-refusals-'));
  const secrets = () => [WRONG_PASSWORD, secureBroker().password('client'), secureBroker().password('rotating')];

  before(async () => {
    await grantPrefix(secureBroker().admin, 'client', PREFIX);
    await grantPrefix(secureBroker().admin, 'rotating', PREFIX);
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  describe('at start: the process exits at once with one line naming the cause', () => {
    for (const refusal of REFUSALS) {
      it(`for ${refusal.cause}`, async () => {
        const ended = await runGatewayToExit({ ...secureKafkaEnv('client'), ...deployment(PREFIX).env, AUTH_JWT_SECRET, ...refusal.env(scratch) });
        expect(ended.code, ended.output.slice(-3000)).to.equal(1);
        expect(ended.lastError).to.equal(`core-gateway: failed to start: Kafka: ${refusal.reason}`);
        // No retrying what retrying cannot fix: kafkajs logs each of its retries with its count.
        expect(kafkaRetries(ended.output), 'kafkajs retries logged').to.deep.equal([]);
        for (const secret of secrets()) expect(ended.output).not.to.include(secret);
      });
    }
  });

  describe("at run time: /readyz answers 503 naming the cause, through the gateway's Kafka probe", () => {
    let server: Server | undefined;
    afterEach(() => server?.close());

    for (const refusal of REFUSALS) {
      it(`for ${refusal.cause}`, async () => {
        const config = loadConfig({ ...secureKafkaEnv('client'), AUTH_JWT_SECRET, ...refusal.env(scratch) });
        const logger = createLogger('silent');
        const probe = createKafkaReadiness(config.kafka!, logger);
        const app = createApp({ logger, api: undefined, readiness: [probe], metrics: createGatewayMetrics(), withOpsRoutes: true });
        // eslint-disable-next-line @typescript-eslint/no-misused-promises -- Koa's handler catches its own rejections (it answers 500 and emits 'error').
        server = createServer(app.callback());
        await new Promise<void>((done) => server!.listen(0, '127.0.0.1', done));
        try {
          const res = await readyz(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
          expect(res.status).to.equal(503);
          expect(res.body.detail).to.equal(`Not ready: kafka: ${refusal.reason}.`);
          for (const secret of secrets()) expect(res.text).not.to.include(secret);
        } finally {
          await probe.close();
        }
      });
    }
  });

  describe('a password changed on the broker while the gateway runs', () => {
    let gateway: GatewayProcess | undefined;
    after(() => gateway?.dispose());

    it('makes /readyz answer 503 "authentication failed" once the gateway must log in again, and 200 once the password is back', async () => {
      const broker = secureBroker();
      const original = broker.password('rotating');
      gateway = await startGatewayProcess({ ...secureKafkaEnv('rotating'), ...deployment(PREFIX).env, AUTH_JWT_SECRET, LOG_LEVEL: 'debug' });
      const rotated = `rotated-${randomBytes(8).toString('hex')}`;
      await broker.setPassword('rotating', rotated);
      // Connections made before keep their login; a restart makes every client log in again.
      await broker.restart();
      const refused = await waitFor('/readyz to name the refused login', async () => {
        const res = await readyz(gateway!.url);
        return res.status === 503 && /authentication failed/.test(res.body.detail ?? '') ? res : undefined;
      }, 60_000, 250);
      expect(refused.body.detail).to.equal(
        'Not ready: kafka: authentication failed: the brokers refused the SCRAM-SHA-512 credentials (check KAFKA_SASL_USERNAME and the password).',
      );
      await broker.setPassword('rotating', original);
      await waitFor('/readyz 200 with the password back', async () => ((await readyz(gateway!.url)).status === 200 ? true : undefined), 60_000, 250);
      for (const secret of [original, rotated]) {
        expect(refused.text).not.to.include(secret);
        expect(gateway.output(), 'the logs').not.to.include(secret);
      }
    });
  });
});
