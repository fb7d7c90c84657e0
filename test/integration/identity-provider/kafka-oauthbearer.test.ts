import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { loadConfig } from '../../../src/config/config.js';
import { createKafkaReadiness } from '../../../src/kafka/kafka-readiness.js';
import { createLogger } from '../../../src/observability/logger.js';
import { NotReady } from '../../../src/observability/readiness.js';
import { startClickHouseServer, type ClickHouseServerHandle } from '../../support/clickhouse-server.js';
import { uuid } from '../../support/factories.js';
import { providerClient, startIdentityProvider, type IdentityProvider, type IdentityProviderClient } from '../../support/identity-provider.js';
import type { TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { startOAuthBroker, type OAuthBroker } from './oauth-broker.js';

const KAFKA_AUDIENCE = 'urn:kafka';
const API_AUDIENCE = 'urn:core-gateway';
/** Kafka clients' token lifetime: our provider asks again at 80% of it, the broker makes them log in again within MAX_REAUTH_MS. */
const KAFKA_TOKEN_TTL_S = 40;
const MAX_REAUTH_MS = 20_000;
const JWKS_REFRESH_MS = 2000;
const CLOCK_SKEW_S = 1;

/**
 * Kafka OAUTHBEARER against a broker that checks each token's signature with the
 * identity provider's JWKS (Kafka's OAuthBearerValidatorCallbackHandler), the gateway
 * and the ingest consumer fetching their tokens from the provider's token endpoint.
 */
describe('Kafka OAUTHBEARER with tokens from an OpenID Connect provider', function () {
  this.timeout(120_000);
  const orgId = uuid();
  const gatewayClient = providerClient({ audience: KAFKA_AUDIENCE, scope: 'kafka', tokenTtlS: KAFKA_TOKEN_TTL_S });
  const consumerClient = providerClient({ audience: KAFKA_AUDIENCE, scope: 'kafka', tokenTtlS: KAFKA_TOKEN_TTL_S });
  const apiCaller = providerClient({ audience: API_AUDIENCE, orgIds: [orgId] });
  const otherAudience = providerClient({ audience: 'urn:another-service', scope: 'kafka' });
  const shortLived = providerClient({ audience: KAFKA_AUDIENCE, scope: 'kafka', tokenTtlS: 1 });
  const longLived = providerClient({ audience: KAFKA_AUDIENCE, scope: 'kafka', tokenTtlS: 600 });
  const scratch = mkdtempSync(join(tmpdir(), 'core-gateway-kafka-oauth-'));
  let idp: IdentityProvider;
  let broker: OAuthBroker;
  let clickhouse: ClickHouseServerHandle;
  const runtimes: TestGateway[] = [];

  before(async function () {
    this.timeout(300_000);
    idp = await startIdentityProvider([gatewayClient, consumerClient, apiCaller, otherAudience, shortLived, longLived]);
    [broker, clickhouse] = await Promise.all([
      startOAuthBroker({
        jwksUrl: idp.jwksUrl,
        audience: KAFKA_AUDIENCE,
        issuer: idp.issuer,
        jwksRefreshMs: JWKS_REFRESH_MS,
        clockSkewS: CLOCK_SKEW_S,
        maxReauthMs: MAX_REAUTH_MS,
      }),
      startClickHouseServer(),
    ]);
  });
  afterEach(async () => {
    await Promise.all(runtimes.splice(0).map((r) => r.close()));
  });
  after(async () => {
    try {
      await Promise.all([broker?.stop(), clickhouse?.stop()]);
    } finally {
      await idp?.stop();
      rmSync(scratch, { recursive: true, force: true });
    }
  });

  /** Kafka settings of a client that gets its tokens from the provider's token endpoint. */
  function fromProvider(client: IdentityProviderClient): Record<string, string> {
    const secretFile = join(scratch, `${client.clientId}.secret`);
    writeFileSync(secretFile, `${client.clientSecret}\n`, { mode: 0o600 });
    return {
      KAFKA_BROKERS: broker.bootstrap,
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA_FILE: broker.caFile,
      KAFKA_SASL_MECHANISM: 'oauthbearer',
      KAFKA_SASL_OAUTH_TOKEN_URL: idp.tokenUrl,
      KAFKA_SASL_OAUTH_CLIENT_ID: client.clientId,
      KAFKA_SASL_OAUTH_CLIENT_SECRET_FILE: secretFile,
      KAFKA_SASL_OAUTH_SCOPE: 'kafka',
    };
  }

  /** Kafka settings of a client that presents the token in a file, whatever it is. */
  function withTokenFile(token: string): Record<string, string> {
    const file = join(scratch, `token-${randomBytes(4).toString('hex')}`);
    writeFileSync(file, `${token}\n`, { mode: 0o600 });
    return { KAFKA_BROKERS: broker.bootstrap, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: broker.caFile, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: file };
  }

  /**
   * What the gateway's Kafka readiness check says with these settings: 'ready', or the
   * refusal it names. A check that fails without naming one (kafkajs can lose the cause
   * of a failed first connect) is asked again, as /readyz is polled.
   */
  async function kafkaCheck(env: Record<string, string>): Promise<string> {
    const config = loadConfig({ AUTH_JWT_SECRET: 's'.repeat(32), ...env });
    const probe = createKafkaReadiness(config.kafka!, createLogger('silent'));
    try {
      return await waitFor('the Kafka check to pass or name a refusal', async () => {
        try {
          await probe.check();
          return 'ready';
        } catch (error) {
          if (error instanceof NotReady) return error.message;
          throw error;
        }
      }, 30_000, 200);
    } finally {
      await probe.close();
    }
  }

  it('logs in with a token from the provider, and refuses one issued for another audience', async () => {
    expect(await kafkaCheck(fromProvider(gatewayClient))).to.equal('ready');
    const token = (await idp.token(otherAudience, 'kafka')).access_token;
    expect(decodeJwt(token).aud).to.equal('urn:another-service');
    const refusal = 'authentication failed: the brokers refused the OAUTHBEARER token';
    expect(await kafkaCheck(fromProvider(otherAudience))).to.equal(refusal);
    expect(await kafkaCheck(withTokenFile(token))).to.equal(refusal);
  });

  it('refuses a token of the provider once it has expired', async () => {
    const token = (await idp.token(shortLived, 'kafka')).access_token;
    const exp = decodeJwt(token).exp!;
    await waitFor('the token to expire past the broker\'s clock skew', async () => (Date.now() >= (exp + CLOCK_SKEW_S + 1) * 1000 ? true : undefined), 10_000, 50);
    expect(await kafkaCheck(withTokenFile(token))).to.equal('authentication failed: the brokers refused the OAUTHBEARER token');
  });
});
