import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { loadConfig } from '../../../src/config/config.js';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { createKafkaReadiness } from '../../../src/kafka/kafka-readiness.js';
import { createLogger } from '../../../src/observability/logger.js';
import { NotReady } from '../../../src/observability/readiness.js';
import { startClickHouseServer, type ClickHouseServerHandle } from '../../support/clickhouse-server.js';
import { uuid } from '../../support/factories.js';
import { newProviderKey, providerClient, startIdentityProvider, type IdentityProvider, type IdentityProviderClient } from '../../support/identity-provider.js';
import { startTestGateway, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { runGatewayToExit } from '../kafka-security/gateway-exit.js';
import { startOAuthBroker, type OAuthBroker } from './oauth-broker.js';
import { commandTopicEnvironment, commandTopicNames } from '../../support/command-topics.js';

const KAFKA_AUDIENCE = 'urn:kafka';
const API_AUDIENCE = 'urn:core-gateway';
/**
 * Kafka clients' token lifetime, short so the test sees renewals: the gateway renews a
 * 40 s token after 20 s (tokenReuseMs), and the broker makes every connection log in
 * again within MAX_REAUTH_MS, so renewed tokens reach the broker while the test runs.
 */
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
    // A gateway started with it stops at once, naming the cause, printing neither token nor secret.
    const ended = await runGatewayToExit({ ...fromProvider(otherAudience), KAFKA_TOPIC_PARTITIONS: '1', AUTH_JWT_SECRET: 's'.repeat(32) });
    expect(ended.code, ended.output.slice(-3000)).to.equal(1);
    expect(ended.lastError).to.equal(`core-gateway: failed to start: Kafka: ${refusal}`);
    expect(ended.output).not.to.include(otherAudience.clientSecret);
    expect(ended.output).not.to.include(token.split('.')[1]);
  });

  it('refuses a token of the provider once it has expired', async () => {
    const token = (await idp.token(shortLived, 'kafka')).access_token;
    const exp = decodeJwt(token).exp!;
    await waitFor('the token to expire past the broker\'s clock skew', async () => (Date.now() >= (exp + CLOCK_SKEW_S + 1) * 1000 ? true : undefined), 10_000, 50);
    expect(await kafkaCheck(withTokenFile(token))).to.equal('authentication failed: the brokers refused the OAUTHBEARER token');
  });

  it('keeps the gateway and the ingest consumer working through a key rotation at the provider', async () => {
    const refusedBefore = broker.failedAuthentications().length;
    const run = `idp-${randomBytes(4).toString('hex')}`;
    const common = {
      EVENTS_TOPICS: `${run}.platform.events`,
      ...commandTopicEnvironment(commandTopicNames((name) => `${run}.${name}`)),
      EVENTS_DLQ_TOPIC: `${run}.platform.events.dlq`,
      KAFKA_CONSUMER_GROUP: `${run}.ingest`,
      KAFKA_TOPIC_PARTITIONS: '1',
      INGEST_BATCH_WAIT_MS: '50',
      CLICKHOUSE_URL: clickhouse.url,
      CLICKHOUSE_DATABASE: `idp_${randomBytes(5).toString('hex')}`,
      CURSOR_SECRET: randomBytes(32).toString('hex'),
      // The HTTP API trusts the same provider, for tokens of another audience.
      AUTH_JWT_SECRET: '',
      AUTH_OIDC_ISSUER: idp.issuer,
      AUTH_AUDIENCE: API_AUDIENCE,
    };
    const t0 = Date.now();
    const gateway = await startTestGateway({ ...fromProvider(gatewayClient), ...common, ROLE: 'gateway' });
    runtimes.push(gateway);
    const consumer = await startTestGateway({ ...fromProvider(consumerClient), ...common, ROLE: 'consumer' });
    runtimes.push(consumer);

    const projectId = uuid();
    const apiHeaders = { authorization: `Bearer ${(await idp.token(apiCaller, 'events:read devices:enroll')).access_token}`, 'org-id': orgId };
    const accepted: { deviceId: string; at: number }[] = [];
    const failed: string[] = [];
    let stopping = false;
    let renewalMs = 0;
    // One enrollment every 100 ms: each waits for the broker's acknowledgement, so every login the producer needs is on this path.
    const traffic = (async () => {
      while (!stopping) {
        const deviceId = uuid();
        const res = await gateway.call('POST', `/projects/${projectId}/fleets/${uuid()}/devices/${deviceId}/enroll`, { headers: apiHeaders, body: { display_name: 'Pump' } });
        if (res.status === 202) accepted.push({ deviceId, at: Date.now() });
        else failed.push(`${Date.now() - t0} ms in: ${res.status} ${res.text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
    const acceptedSince = (since: number, count: number) =>
      waitFor(`${count} enrollments accepted since ${since}`, async () => (accepted.filter((a) => a.at > since).length >= count || failed.length > 0 ? true : undefined), 60_000, 50);
    const javaFetchSince = (since: number) =>
      waitFor('the broker to fetch the key set again', async () => ((await idp.jwksFetches()).some((f) => f.at > since && f.userAgent.startsWith('Java/')) ? true : undefined), 20_000, 100);

    try {
      await acceptedSince(0, 5);
      const [oldKey] = idp.keys();
      // A token of the old key that outlives the rotation: accepted now, refused once the key is retired.
      const oldKeyToken = (await idp.token(longLived, 'kafka')).access_token;
      expect(decodeProtectedHeader(oldKeyToken).kid).to.equal(oldKey!.kid);
      expect(await kafkaCheck(withTokenFile(oldKeyToken))).to.equal('ready');

      // 1. The next key is published beside the current one, which still signs.
      const newKey = await newProviderKey();
      await idp.setKeys([oldKey!, newKey], oldKey!.kid);
      await javaFetchSince(Date.now());
      // 2. It signs. The gateway and the consumer get tokens of it as theirs near expiry, when the broker makes them log in again.
      await idp.setKeys([oldKey!, newKey], newKey.kid);
      const switched = Date.now();
      const renewed = await waitFor(
        'the gateway and the consumer to fetch tokens of the new key',
        async () => {
          const requests = (await idp.tokenRequests()).filter((r) => r.at > switched && r.status === 200 && r.signingKid === newKey.kid);
          const gatewayRenewed = requests.find((r) => r.clientId === gatewayClient.clientId);
          const consumerRenewed = requests.find((r) => r.clientId === consumerClient.clientId);
          return gatewayRenewed !== undefined && consumerRenewed !== undefined ? Math.max(gatewayRenewed.at, consumerRenewed.at) : undefined;
        },
        (KAFKA_TOKEN_TTL_S + 20) * 1000,
        250,
      );
      renewalMs = renewed - switched;
      await acceptedSince(renewed, 10);
      // 3. The old key is retired; the broker drops it at its next refresh.
      await idp.setKeys([newKey], newKey.kid);
      await javaFetchSince(Date.now());
      expect(broker.failedAuthentications().slice(refusedBefore), 'logins the broker refused during the rotation').to.deep.equal([]);
      expect(await kafkaCheck(withTokenFile(oldKeyToken))).to.equal('authentication failed: the brokers refused the OAUTHBEARER token');
      await acceptedSince(Date.now(), 10);
    } finally {
      stopping = true;
      await traffic;
    }
    expect(failed, 'enrollments not acknowledged').to.deep.equal([]);

    // Everything acknowledged went through the consumer into the store, the rotation notwithstanding.
    const expected = new Set(accepted.map((a) => a.deviceId));
    await waitFor(
      `all ${expected.size} enrollments in the feed`,
      async () => {
        const seen = new Set<string>();
        let cursor: string | undefined;
        do {
          const page = await gateway.call<CanonicalEventPageResponse>('GET', `/projects/${projectId}/events?domain=devices&limit=200${cursor === undefined ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, { headers: apiHeaders });
          if (page.status !== 200) return undefined;
          for (const item of page.body.data.items) if (item.device_id !== null && item.device_id !== undefined) seen.add(item.device_id);
          cursor = page.body.meta.has_more ? (page.body.meta.next_cursor ?? undefined) : undefined;
        } while (cursor !== undefined);
        return [...expected].every((id) => seen.has(id)) ? true : undefined;
      },
      60_000,
      500,
    );
    console.log(`      key rotation: ${accepted.length} enrollments acknowledged and stored, none refused; both clients had tokens of the new key ${Math.round(renewalMs / 1000)} s after it began signing`);
  });
});
