import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { freePort, runScript, stateValue } from '../../support/processes.js';

export interface OAuthBrokerOptions {
  readonly jwksUrl: string;
  readonly audience: string;
  readonly issuer: string;
  /** sasl.oauthbearer.jwks.endpoint.refresh.ms: how soon the broker sees a key published ahead of use. */
  readonly jwksRefreshMs: number;
  /** sasl.oauthbearer.clock.skew.seconds. */
  readonly clockSkewS: number;
  /** connections.max.reauth.ms: clients must log in again, with a token from the provider, this often. */
  readonly maxReauthMs: number;
}

/**
 * A single-node broker whose client listener is SASL_SSL with OAUTHBEARER checked by
 * Kafka's own OAuthBearerValidatorCallbackHandler against an identity provider's JWKS
 * (scripts/kafka-security-lib.sh, KAFKA_OAUTHBEARER_JWKS_URL). No ACLs: what is under
 * test is who may log in, not what they may do.
 */
export interface OAuthBroker {
  readonly bootstrap: string;
  readonly caFile: string;
  /** The SCRAM super user admin, for reading topics. */
  readonly admin: Kafka;
  /** Lines of the broker log that record a refused login ("Failed authentication with ..."). */
  failedAuthentications(): string[];
  stop(): Promise<void>;
}

export async function startOAuthBroker(options: OAuthBrokerOptions): Promise<OAuthBroker> {
  const stateDir = mkdtempSync(join(tmpdir(), 'core-gateway-test-kafka-oauth-'));
  const port = await freePort();
  const env = {
    KAFKA_STATE_DIR: stateDir,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    KAFKA_NODES: '1',
    KAFKA_SECURITY: 'sasl_ssl',
    KAFKA_SSL_CERT_NAMES: '127.0.0.1',
    KAFKA_OAUTHBEARER_JWKS_URL: options.jwksUrl,
    KAFKA_OAUTHBEARER_AUDIENCE: options.audience,
    KAFKA_OAUTHBEARER_ISSUER: options.issuer,
    KAFKA_OAUTHBEARER_JWKS_REFRESH_MS: String(options.jwksRefreshMs),
    KAFKA_OAUTHBEARER_CLOCK_SKEW_S: String(options.clockSkewS),
    KAFKA_CONNECTIONS_MAX_REAUTH_MS: String(options.maxReauthMs),
    // Refused logins are logged at INFO (org.apache.kafka.common.network.Selector).
    KAFKA_LOG_LEVEL: 'INFO',
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
  const serverLog = join(stateValue(join(stateDir, 'broker.env'), 'KAFKA_DATA_DIR') ?? stateDir, 'logs', 'server.log');
  const admin = new Kafka({
    clientId: 'identity-provider-test-admin',
    brokers: [bootstrap],
    ssl: { ca: readFileSync(caFile, 'utf8') },
    sasl: { mechanism: 'scram-sha-512', username: 'admin', password: readFileSync(join(securityDir, 'users', 'admin.password'), 'utf8').trim() },
    logLevel: logLevel.NOTHING,
  });
  return {
    bootstrap,
    caFile,
    admin,
    failedAuthentications: () =>
      readFileSync(serverLog, 'utf8')
        .split('\n')
        .filter((line) => line.includes('Failed authentication with')),
    async stop() {
      await runScript('kafka-stop.sh', env);
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}
