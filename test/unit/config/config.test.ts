import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../../src/config/config.js';
import { configRefusal } from '../../support/config-refusal.js';
import { clickHouseConnectionOptions } from '../../../src/store/clickhouse-connection-options.js';
import { perTopicKey } from '../../../src/commands/catalogue.js';
import { PAGE_BATCHING, pageBatchingOf } from '../../../src/store/batched-page-reads.js';

const SECRET = 's'.repeat(32);

describe('loadConfig', () => {
  it('gives the embedded defaults with nothing set', () => {
    const config = loadConfig({});
    expect(config).to.deep.include({ role: 'all', port: 8080, dataDir: './data', kafka: undefined, clickhouse: undefined });
    expect(config.auth).to.deep.equal({ kind: 'development' });
    expect(config.topics).to.deep.equal({
      events: ['platform.events'],
      // Each command's topic at its catalogue default; docs/asyncapi.json's drift check pins the names.
      ...perTopicKey((topic) => topic.default),
      deadLetter: 'platform.events.dlq',
    });
    expect(Object.isFrozen(config)).to.equal(true);
  });

  it('reads brokers, topics and the ClickHouse URL with credentials in it', () => {
    const config = loadConfig({
      KAFKA_BROKERS: 'a:9092, b:9093',
      EVENTS_TOPICS: 'platform.events,legacy.events',
      CLICKHOUSE_URL: 'http://u%40x:p%3Aw@ch:8123/telemetry',
      AUTH_JWT_SECRET: SECRET,
    });
    expect(config.kafka?.brokers).to.deep.equal(['a:9092', 'b:9093']);
    expect(config.topics.events).to.deep.equal(['platform.events', 'legacy.events']);
    expect(config.clickhouse).to.deep.equal({ url: 'http://ch:8123', username: 'u@x', password: 'p:w', ca: undefined, database: 'telemetry', requestTimeoutMs: 10_000, cluster: undefined, idempotencyStore: 'auto' });
  });

  it('lets CLICKHOUSE_USER, _PASSWORD and _DATABASE beside the URL win', () => {
    const config = loadConfig({
      CLICKHOUSE_URL: 'http://u:p@ch:8123/a',
      CLICKHOUSE_USER: 'v',
      CLICKHOUSE_PASSWORD: 'q',
      CLICKHOUSE_DATABASE: 'b',
      AUTH_JWT_SECRET: SECRET,
    });
    expect(config.clickhouse).to.deep.include({ username: 'v', password: 'q', database: 'b' });
  });

  for (const [env, variable] of [
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ ROLE: 'worker' }, 'ROLE'],
    [{ ROLE: 'gateway' }, 'ROLE'],
    [{ KAFKA_BROKERS: 'localhost' }, 'KAFKA_BROKERS'],
    [{ KAFKA_BROKERS: 'a:1,,b:2' }, 'KAFKA_BROKERS'],
    [{ CLICKHOUSE_URL: 'not a url' }, 'CLICKHOUSE_URL'],
    [{ CLICKHOUSE_URL: 'ftp://ch', AUTH_JWT_SECRET: SECRET }, 'CLICKHOUSE_URL'],
    [{ CLICKHOUSE_URL: 'http://ch/bad-name', AUTH_JWT_SECRET: SECRET }, 'CLICKHOUSE_DATABASE'],
    [{ AUTH_JWT_SECRET: 'short' }, 'AUTH_JWT_SECRET'],
    [{ AUTH_JWKS_URL: 'nope' }, 'AUTH_JWKS_URL'],
    [{ AUTH_PUBLIC_KEY: 'abc' }, 'AUTH_PUBLIC_KEY'],
    [{ AUTH_JWKS_URL: 'https://idp/jwks', AUTH_JWKS_TIMEOUT_MS: '2s' }, 'AUTH_JWKS_TIMEOUT_MS'],
    [{ AUTH_JWKS_URL: 'https://idp/jwks', AUTH_JWKS_TIMEOUT_MS: '0' }, 'AUTH_JWKS_TIMEOUT_MS'],
    [{ AUTH_JWKS_URL: 'https://idp/jwks', AUTH_JWKS_COOLDOWN_MS: '-1' }, 'AUTH_JWKS_COOLDOWN_MS'],
    [{ AUTH_JWKS_URL: 'https://idp/jwks', AUTH_JWKS_MAX_AGE_MS: '10' }, 'AUTH_JWKS_MAX_AGE_MS'],
    [{ AUTH_CLOCK_TOLERANCE_S: '301' }, 'AUTH_CLOCK_TOLERANCE_S'],
    [{ AUTH_JWT_SECRET: SECRET, AUTH_JWKS_URL: 'https://idp/jwks' }, 'AUTH_JWT_SECRET, AUTH_JWKS_URL'],
    [{ AUTH_OIDC_ISSUER: 'idp.example.com' }, 'AUTH_OIDC_ISSUER'],
    [{ AUTH_OIDC_ISSUER: 'ftp://idp.example.com' }, 'AUTH_OIDC_ISSUER'],
    [{ AUTH_OIDC_ISSUER: 'https://idp.example.com/?tenant=1' }, 'AUTH_OIDC_ISSUER'],
    [{ AUTH_OIDC_ISSUER: 'https://idp.example.com#x' }, 'AUTH_OIDC_ISSUER'],
    [{ AUTH_OIDC_ISSUER: 'https://idp.example.com', AUTH_JWKS_URL: 'https://idp/jwks' }, 'AUTH_JWKS_URL, AUTH_OIDC_ISSUER'],
    [{ AUTH_OIDC_ISSUER: 'https://idp.example.com', AUTH_ISSUER: 'https://other.example.com' }, 'AUTH_ISSUER'],
    [{ AUTH_OIDC_ISSUER: 'https://idp.example.com', AUTH_JWKS_TIMEOUT_MS: '0' }, 'AUTH_JWKS_TIMEOUT_MS'],
    [{ KAFKA_BROKERS: 'k:9092' }, 'AUTH_JWT_SECRET'],
    [{ EVENTS_TOPICS: 'ok,bad topic' }, 'EVENTS_TOPICS'],
    [{ EVENTS_TOPICS: 'platform.events,core.device-enrollment.commands' }, 'EVENTS_TOPICS'],
    [{ EVENTS_TOPICS: 'my.policies', EDGE_POLICY_COMMANDS_TOPIC: 'my.policies' }, 'EVENTS_TOPICS'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ CURSOR_SECRET: 'short' }, 'CURSOR_SECRET'],
    [{ COMMAND_TIMEOUT_MS: '5' }, 'COMMAND_TIMEOUT_MS'],
    [{ STREAM_SETTLE_MS: '2s' }, 'STREAM_SETTLE_MS'],
    [{ STREAM_POLL_MS: '5' }, 'STREAM_POLL_MS'],
    [{ STREAM_HEARTBEAT_MS: '0' }, 'STREAM_HEARTBEAT_MS'],
    [{ STREAM_MAX_PER_ORG: '0' }, 'STREAM_MAX_PER_ORG'],
    [{ STREAM_MAX_PER_ORG: '-1' }, 'STREAM_MAX_PER_ORG'],
    [{ SHUTDOWN_GRACE_MS: 'soon' }, 'SHUTDOWN_GRACE_MS'],
    [{ AUTH_JWT_SECRET: SECRET, AUTH_JWKS_COOLDOWN_MS: '1000' }, 'AUTH_JWKS_COOLDOWN_MS'],
    [{ PORT: '9000', OPS_PORT: '9000' }, 'OPS_PORT'],
    [{ OPS_PORT: 'ops' }, 'OPS_PORT'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_REQUEST_TIMEOUT_MS: '10s' }, 'CLICKHOUSE_REQUEST_TIMEOUT_MS'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER: 'a b' }, 'CLICKHOUSE_CLUSTER'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER: 'c', CLICKHOUSE_CLUSTER_REPLICATED: 'no' }, 'CLICKHOUSE_CLUSTER_REPLICATED'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER_REPLICATED: 'false' }, 'CLICKHOUSE_CLUSTER_REPLICATED'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_SHARD_URLS: 'http://a' }, 'CLICKHOUSE_SHARD_URLS'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER: 'c', CLICKHOUSE_SHARD_URLS: 'http://a' }, 'CLICKHOUSE_SHARD_URLS'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER: 'c', CLICKHOUSE_CLUSTER_REPLICATED: 'false', CLICKHOUSE_SHARD_URLS: 'ftp://a' }, 'CLICKHOUSE_SHARD_URLS'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, IDEMPOTENCY_STORE: 'zookeeper' }, 'IDEMPOTENCY_STORE'],
    [{ HTTP_HEADERS_TIMEOUT_MS: '10s' }, 'HTTP_HEADERS_TIMEOUT_MS'],
    [{ HTTP_HEADERS_TIMEOUT_MS: '50' }, 'HTTP_HEADERS_TIMEOUT_MS'],
    [{ HTTP_REQUEST_TIMEOUT_MS: '0' }, 'HTTP_REQUEST_TIMEOUT_MS'],
    [{ HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }, 'HTTP_HEADERS_TIMEOUT_MS'],
    [{ HTTP_KEEP_ALIVE_TIMEOUT_MS: '0' }, 'HTTP_KEEP_ALIVE_TIMEOUT_MS'],
    [{ RATE_LIMIT_PER_ORG: '-1' }, 'RATE_LIMIT_PER_ORG'],
    [{ RATE_LIMIT_PER_ORG: '2.5' }, 'RATE_LIMIT_PER_ORG'],
    [{ RATE_LIMIT_PER_ORG: '10', RATE_LIMIT_BURST: '0' }, 'RATE_LIMIT_BURST'],
    [{ RATE_LIMIT_BURST: '10' }, 'RATE_LIMIT_BURST'],
    [{ KAFKA_BROKERS: 'k:9092', AUTH_JWT_SECRET: SECRET, KAFKA_REPLICATION_FACTOR: '0' }, 'KAFKA_REPLICATION_FACTOR'],
    [{ KAFKA_BROKERS: 'k:9092', AUTH_JWT_SECRET: SECRET, KAFKA_REPLICATION_FACTOR: 'three' }, 'KAFKA_REPLICATION_FACTOR'],
    [{ KAFKA_BROKERS: 'k:9092', AUTH_JWT_SECRET: SECRET, KAFKA_MIN_INSYNC_REPLICAS: '0' }, 'KAFKA_MIN_INSYNC_REPLICAS'],
    [{ KAFKA_BROKERS: 'k:9092', AUTH_JWT_SECRET: SECRET, KAFKA_REPLICATION_FACTOR: '2', KAFKA_MIN_INSYNC_REPLICAS: '3' }, 'KAFKA_MIN_INSYNC_REPLICAS'],
  ] as const) {
    it(`stops with one message naming ${variable} for ${JSON.stringify(env)}`, () => {
      const error = configRefusal(env);
      expect(error.variable).to.equal(variable);
      expect(error.message).to.match(new RegExp(`^${variable}: `));
    });
  }

  it('leaves topic replication to the cluster size unless KAFKA_REPLICATION_FACTOR or KAFKA_MIN_INSYNC_REPLICAS is set', () => {
    const base = { KAFKA_BROKERS: 'k:9092', AUTH_JWT_SECRET: SECRET };
    expect(loadConfig(base).kafka).to.deep.include({ replicationFactor: undefined, minInsyncReplicas: undefined });
    expect(loadConfig({ ...base, KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: '2' }).kafka).to.deep.include({ replicationFactor: 3, minInsyncReplicas: 2 });
    expect(loadConfig({ ...base, KAFKA_REPLICATION_FACTOR: '1' }).kafka).to.deep.include({ replicationFactor: 1, minInsyncReplicas: undefined });
    expect(loadConfig({ ...base, KAFKA_MIN_INSYNC_REPLICAS: '2' }).kafka).to.deep.include({ replicationFactor: undefined, minInsyncReplicas: 2 });
  });

  it('writes uncompressed record batches unless KAFKA_COMPRESSION names a codec Kafka defines', () => {
    const base = { KAFKA_BROKERS: 'k:9092', AUTH_JWT_SECRET: SECRET };
    expect(loadConfig(base).kafka?.compression).to.equal('none');
    for (const codec of ['gzip', 'snappy', 'lz4', 'zstd']) expect(loadConfig({ ...base, KAFKA_COMPRESSION: codec }).kafka?.compression).to.equal(codec);
    expect(() => loadConfig({ ...base, KAFKA_COMPRESSION: 'brotli' })).to.throw('KAFKA_COMPRESSION: must be one of none, gzip, snappy, lz4, zstd, got "brotli"');
  });

  it('bounds ingest inserts and what is in flight by bytes, four inserts of it unless told', () => {
    expect(loadConfig({}).ingest).to.deep.include({ batchBytes: 32 * 1024 * 1024, maxInFlightBytes: 128 * 1024 * 1024 });
    expect(loadConfig({ INGEST_BATCH_BYTES: '1048576' }).ingest).to.deep.include({ batchBytes: 1_048_576, maxInFlightBytes: 4_194_304 });
    expect(() => loadConfig({ INGEST_BATCH_BYTES: '1000' })).to.throw('INGEST_BATCH_BYTES: must be between 65536 and 1073741824, got 1000');
  });

  it('fetches at most 1 MiB of a partition unless told, within 64 KiB and 16 MiB', () => {
    expect(loadConfig({}).ingest.fetchPartitionBytes).to.equal(1024 * 1024);
    expect(loadConfig({ INGEST_FETCH_PARTITION_BYTES: '4194304' }).ingest.fetchPartitionBytes).to.equal(4 * 1024 * 1024);
    expect(() => loadConfig({ INGEST_FETCH_PARTITION_BYTES: '1000' })).to.throw('INGEST_FETCH_PARTITION_BYTES: must be between 65536 and 16777216, got 1000');
  });

  it('asks for the consumed topics\' partitions every 10 s unless told, within 1 s and kafkajs\'s own 300 s', () => {
    expect(loadConfig({}).ingest.metadataMaxAgeMs).to.equal(10_000);
    expect(loadConfig({ INGEST_METADATA_MAX_AGE_MS: '2000' }).ingest.metadataMaxAgeMs).to.equal(2000);
    expect(() => loadConfig({ INGEST_METADATA_MAX_AGE_MS: '500' })).to.throw('INGEST_METADATA_MAX_AGE_MS: must be between 1000 and 300000, got 500');
    expect(() => loadConfig({ INGEST_METADATA_MAX_AGE_MS: '10s' })).to.throw('INGEST_METADATA_MAX_AGE_MS: must be a whole number, got "10s"');
  });

  it('sends feed page reads in two batches at once unless told, none at 0', () => {
    expect(pageBatchingOf(loadConfig({}))).to.deep.equal(PAGE_BATCHING);
    expect(pageBatchingOf(loadConfig({ FEED_BATCHES_IN_FLIGHT: '4' }))).to.deep.equal({ ...PAGE_BATCHING, inFlight: 4 });
    expect(pageBatchingOf(loadConfig({ FEED_BATCHES_IN_FLIGHT: '0' }))).to.equal(false);
    expect(() => loadConfig({ FEED_BATCHES_IN_FLIGHT: '65' })).to.throw('FEED_BATCHES_IN_FLIGHT: must be between 0 and 64, got 65');
  });

  it('keeps polled first pages for five minutes unless told, none at 0, at most an hour', () => {
    expect(loadConfig({}).feedFirstPageMaxAgeMs).to.equal(300_000);
    expect(loadConfig({ FEED_FIRST_PAGE_MAX_AGE_MS: '0' }).feedFirstPageMaxAgeMs).to.equal(0);
    expect(loadConfig({ FEED_FIRST_PAGE_MAX_AGE_MS: '3600000' }).feedFirstPageMaxAgeMs).to.equal(3_600_000);
    expect(() => loadConfig({ FEED_FIRST_PAGE_MAX_AGE_MS: '3600001' })).to.throw('FEED_FIRST_PAGE_MAX_AGE_MS: must be between 0 and 3600000, got 3600001');
  });

  it('reads the live tail settings, with their defaults', () => {
    expect(loadConfig({}).liveTail).to.deep.equal({
      settleMs: 2000,
      pollMs: 500,
      heartbeatMs: 15_000,
      maxPerOrg: 1000,
      maxPerCaller: 100,
      maxPerProcess: 10_000,
      maxBufferBytes: 262_144,
    });
    const config = loadConfig({
      STREAM_SETTLE_MS: '0',
      STREAM_POLL_MS: '50',
      STREAM_HEARTBEAT_MS: '1000',
      STREAM_MAX_PER_ORG: '3',
      STREAM_MAX_PER_CALLER: '4',
      STREAM_MAX_PER_PROCESS: '5',
      STREAM_MAX_BUFFER_BYTES: '65536',
    });
    expect(config.liveTail).to.deep.equal({ settleMs: 0, pollMs: 50, heartbeatMs: 1000, maxPerOrg: 3, maxPerCaller: 4, maxPerProcess: 5, maxBufferBytes: 65_536 });
  });

  it('reads a ClickHouse cluster, replicated unless told otherwise', () => {
    const base = { CLICKHOUSE_URL: 'http://ch:8123', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER: 'telemetry' };
    expect(loadConfig(base).clickhouse?.cluster).to.deep.equal({ name: 'telemetry', replicated: true, shardUrls: undefined });
    expect(loadConfig({ ...base, CLICKHOUSE_CLUSTER_REPLICATED: 'false' }).clickhouse?.cluster).to.deep.equal({ name: 'telemetry', replicated: false, shardUrls: undefined });
    expect(
      loadConfig({ ...base, CLICKHOUSE_CLUSTER_REPLICATED: 'false', CLICKHOUSE_SHARD_URLS: 'http://a:8123/, http://b:8123' }).clickhouse?.cluster,
    ).to.deep.equal({ name: 'telemetry', replicated: false, shardUrls: ['http://a:8123', 'http://b:8123'] });
  });

  it('keeps Idempotency-Key records in KeeperMap where the server can hold it, unless told', () => {
    const base = { CLICKHOUSE_URL: 'http://ch:8123', AUTH_JWT_SECRET: SECRET };
    expect(loadConfig(base).clickhouse?.idempotencyStore).to.equal('auto');
    expect(loadConfig({ ...base, IDEMPOTENCY_STORE: 'table' }).clickhouse?.idempotencyStore).to.equal('table');
    expect(loadConfig({ ...base, IDEMPOTENCY_STORE: 'keeper-map' }).clickhouse?.idempotencyStore).to.equal('keeper-map');
  });

  it('allows split roles only with Kafka and a ClickHouse server', () => {
    const config = loadConfig({ ROLE: 'consumer', KAFKA_BROKERS: 'k:9092', CLICKHOUSE_URL: 'http://ch:8123', AUTH_JWT_SECRET: SECRET });
    expect(config.role).to.equal('consumer');
    expect(configRefusal({ ROLE: 'consumer', CLICKHOUSE_URL: 'http://ch:8123', AUTH_JWT_SECRET: SECRET }).variable).to.equal('ROLE');
  });

  it('reads the HTTP server time limits, with their defaults', () => {
    expect(loadConfig({}).http).to.deep.equal({ headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5000 });
    const config = loadConfig({ HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '500', HTTP_KEEP_ALIVE_TIMEOUT_MS: '65000' });
    expect(config.http).to.deep.equal({ headersTimeoutMs: 500, requestTimeoutMs: 500, keepAliveTimeoutMs: 65_000 });
  });

  it('has no rate limit unless RATE_LIMIT_PER_ORG is set above 0; the burst defaults to one second of it', () => {
    expect(loadConfig({}).rateLimit).to.equal(undefined);
    expect(loadConfig({ RATE_LIMIT_PER_ORG: '0' }).rateLimit).to.equal(undefined);
    expect(loadConfig({ RATE_LIMIT_PER_ORG: '50' }).rateLimit).to.deep.equal({ perSecond: 50, burst: 50 });
    expect(loadConfig({ RATE_LIMIT_PER_ORG: '5', RATE_LIMIT_BURST: '20' }).rateLimit).to.deep.equal({ perSecond: 5, burst: 20 });
  });

  it('reads the JWKS timings and the clock tolerance, with their defaults', () => {
    const jwks = loadConfig({ AUTH_JWKS_URL: 'https://idp/jwks' });
    expect(jwks.auth).to.deep.equal({ kind: 'jwks', url: new URL('https://idp/jwks'), timeoutMs: 2000, cooldownMs: 30_000, maxAgeMs: 600_000 });
    expect(jwks.clockToleranceSeconds).to.equal(30);
    const tuned = loadConfig({
      AUTH_JWKS_URL: 'https://idp/jwks',
      AUTH_JWKS_TIMEOUT_MS: '500',
      AUTH_JWKS_COOLDOWN_MS: '0',
      AUTH_JWKS_MAX_AGE_MS: '60000',
      AUTH_CLOCK_TOLERANCE_S: '0',
    });
    expect(tuned.auth).to.deep.include({ timeoutMs: 500, cooldownMs: 0, maxAgeMs: 60_000 });
    expect(tuned.clockToleranceSeconds).to.equal(0);
  });

  it('finds the keys of AUTH_OIDC_ISSUER by discovery, and requires that issuer in every token', () => {
    const oidc = loadConfig({ AUTH_OIDC_ISSUER: 'https://login.example.com/tenant-1/', AUTH_JWKS_COOLDOWN_MS: '5000' });
    expect(oidc.auth).to.deep.equal({ kind: 'jwks', url: { issuer: 'https://login.example.com/tenant-1/' }, timeoutMs: 2000, cooldownMs: 5000, maxAgeMs: 600_000 });
    // Kept exactly as written, trailing slash included: `iss` is compared as a string.
    expect(oidc.issuer).to.equal('https://login.example.com/tenant-1/');
    expect(loadConfig({ AUTH_OIDC_ISSUER: 'https://idp.example.com', AUTH_ISSUER: 'https://idp.example.com' }).issuer).to.equal('https://idp.example.com');
    expect(loadConfig({ AUTH_OIDC_ISSUER: 'https://idp.example.com', KAFKA_BROKERS: 'k:9092' }).auth.kind).to.equal('jwks');
  });

  it('accepts a one-line PEM with \\n escapes', () => {
    const config = loadConfig({ AUTH_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\\nMFk=\\n-----END PUBLIC KEY-----' });
    expect(config.auth).to.deep.equal({ kind: 'public-key', pem: '-----BEGIN PUBLIC KEY-----\nMFk=\n-----END PUBLIC KEY-----' });
  });
});

describe('loadConfig: TLS and SASL towards Kafka and ClickHouse', () => {
  const tls = (name: string) => resolve(import.meta.dirname, '..', '..', 'fixtures', 'tls', name);
  const pem = (name: string) => readFileSync(tls(name), 'utf8');
  const PASSWORD = 'pa55-w0rd-that-must-never-show';
  const dir = mkdtempSync(join(tmpdir(), 'core-gateway-config-test-'));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  const passwordFile = file('password', `${PASSWORD}\n`);
  after(() => rmSync(dir, { recursive: true, force: true }));
  const kafka = { KAFKA_BROKERS: 'k:9093', AUTH_JWT_SECRET: SECRET };
  const scram = { ...kafka, KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_USERNAME: 'gateway' };

  it('leaves Kafka in PLAINTEXT without SASL unless told, creating missing topics', () => {
    expect(loadConfig(kafka).kafka).to.deep.include({ ssl: undefined, sasl: undefined, createTopics: true });
    expect(loadConfig({ ...kafka, KAFKA_CREATE_TOPICS: 'false' }).kafka?.createTopics).to.equal(false);
  });

  it('reads TLS with a CA bundle and a client certificate from their files, checking host names by default', () => {
    const config = loadConfig({
      ...kafka,
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA_FILE: tls('ca.pem'),
      KAFKA_SSL_CERT_FILE: tls('client-cert.pem'),
      KAFKA_SSL_KEY_FILE: tls('client-key.pem'),
    });
    expect(config.kafka?.ssl).to.deep.equal({
      ca: pem('ca.pem'),
      clientCertificate: { cert: pem('client-cert.pem'), key: pem('client-key.pem') },
      rejectUnauthorized: true,
    });
    expect(loadConfig({ ...kafka, KAFKA_SSL: 'true' }).kafka?.ssl).to.deep.equal({ ca: undefined, clientCertificate: undefined, rejectUnauthorized: true });
    expect(loadConfig({ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_REJECT_UNAUTHORIZED: 'false' }).kafka?.ssl?.rejectUnauthorized).to.equal(false);
  });

  it('reads a SCRAM or PLAIN password from the environment or from a file without its line break', () => {
    expect(loadConfig({ ...scram, KAFKA_SASL_PASSWORD: PASSWORD }).kafka?.sasl).to.deep.equal({ mechanism: 'scram-sha-512', username: 'gateway', password: PASSWORD });
    expect(loadConfig({ ...scram, KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256', KAFKA_SASL_PASSWORD_FILE: passwordFile }).kafka?.sasl).to.deep.equal({
      mechanism: 'scram-sha-256',
      username: 'gateway',
      password: PASSWORD,
    });
    expect(loadConfig({ ...scram, KAFKA_SASL_MECHANISM: 'plain', KAFKA_SASL_PASSWORD: PASSWORD }).kafka?.sasl?.mechanism).to.equal('plain');
  });

  it('reads OAUTHBEARER from a token file, or from a token endpoint with client credentials, scope and extensions', () => {
    const tokenFile = file('token', 'eyJ.token.value\n');
    expect(loadConfig({ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: tokenFile }).kafka?.sasl).to.deep.equal({
      mechanism: 'oauthbearer',
      token: { kind: 'file', path: tokenFile },
      extensions: undefined,
    });
    const config = loadConfig({
      ...kafka,
      KAFKA_SASL_MECHANISM: 'OAUTHBEARER',
      KAFKA_SASL_OAUTH_TOKEN_URL: 'https://idp.example.com/oauth2/token',
      KAFKA_SASL_OAUTH_CLIENT_ID: 'gateway-client',
      KAFKA_SASL_OAUTH_CLIENT_SECRET_FILE: passwordFile,
      KAFKA_SASL_OAUTH_SCOPE: 'kafka',
      KAFKA_SASL_OAUTH_EXTENSIONS: 'logicalCluster=lkc-abc123, identityPoolId=pool-XyZ',
    });
    expect(config.kafka?.sasl).to.deep.equal({
      mechanism: 'oauthbearer',
      token: { kind: 'client-credentials', url: 'https://idp.example.com/oauth2/token', clientId: 'gateway-client', clientSecret: PASSWORD, scope: 'kafka' },
      extensions: { logicalCluster: 'lkc-abc123', identityPoolId: 'pool-XyZ' },
    });
  });

  it('reads a ClickHouse CA for an https URL and the password from a file, and hands both to the client', () => {
    const config = loadConfig({ CLICKHOUSE_URL: 'https://u@ch.example.com:8443', CLICKHOUSE_CA_FILE: tls('ca.pem'), CLICKHOUSE_PASSWORD_FILE: passwordFile, AUTH_JWT_SECRET: SECRET });
    expect(config.clickhouse).to.deep.include({ username: 'u', password: PASSWORD, ca: pem('ca.pem') });
    const options = clickHouseConnectionOptions(config.clickhouse!);
    expect(options).to.deep.include({ username: 'u', password: PASSWORD });
    expect(options.tls?.ca_cert.toString()).to.equal(pem('ca.pem'));
    expect(clickHouseConnectionOptions(loadConfig({ CLICKHOUSE_URL: 'http://ch:8123', AUTH_JWT_SECRET: SECRET }).clickhouse!).tls).to.equal(undefined);
  });

  it('reads the token secret and the cursor key from files, without their line breaks, outside the embedded default too', () => {
    const jwtSecret = 'j'.repeat(40);
    const cursorSecret = 'c'.repeat(40);
    const config = loadConfig({ KAFKA_BROKERS: 'k:9093', AUTH_JWT_SECRET_FILE: file('jwt-secret', `${jwtSecret}\n`), CURSOR_SECRET_FILE: file('cursor-secret', `${cursorSecret}\r\n`) });
    expect(config.auth).to.deep.equal({ kind: 'hs256', secret: jwtSecret });
    expect(config.cursorSecret).to.equal(cursorSecret);
  });

  const missing = join(dir, 'no-such-file');
  for (const [env, variable] of [
    [{ KAFKA_SSL: 'true' }, 'KAFKA_SSL'],
    [{ KAFKA_SASL_MECHANISM: 'plain', AUTH_JWT_SECRET: SECRET }, 'KAFKA_SASL_MECHANISM'],
    [{ ...kafka, KAFKA_SSL: 'yes' }, 'KAFKA_SSL'],
    [{ ...kafka, KAFKA_SSL_CA_FILE: tls('ca.pem') }, 'KAFKA_SSL_CA_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: missing }, 'KAFKA_SSL_CA_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: dir }, 'KAFKA_SSL_CA_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: passwordFile }, 'KAFKA_SSL_CA_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: tls('client-cert.pem') }, 'KAFKA_SSL_KEY_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_KEY_FILE: tls('client-key.pem') }, 'KAFKA_SSL_CERT_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: tls('client-cert.pem'), KAFKA_SSL_KEY_FILE: tls('other-key.pem') }, 'KAFKA_SSL_KEY_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: tls('client-cert.pem'), KAFKA_SSL_KEY_FILE: tls('encrypted-key.pem') }, 'KAFKA_SSL_KEY_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_CERT_FILE: passwordFile, KAFKA_SSL_KEY_FILE: tls('client-key.pem') }, 'KAFKA_SSL_CERT_FILE'],
    [{ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_REJECT_UNAUTHORIZED: 'no' }, 'KAFKA_SSL_REJECT_UNAUTHORIZED'],
    [{ ...kafka, KAFKA_CREATE_TOPICS: 'maybe' }, 'KAFKA_CREATE_TOPICS'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'gssapi' }, 'KAFKA_SASL_MECHANISM'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'scram-sha-512', KAFKA_SASL_PASSWORD: PASSWORD }, 'KAFKA_SASL_USERNAME'],
    [scram, 'KAFKA_SASL_PASSWORD'],
    [{ ...kafka, KAFKA_SASL_USERNAME: 'gateway', KAFKA_SASL_PASSWORD: PASSWORD }, 'KAFKA_SASL_MECHANISM'],
    [{ ...scram, KAFKA_SASL_PASSWORD: PASSWORD, KAFKA_SASL_PASSWORD_FILE: passwordFile }, 'KAFKA_SASL_PASSWORD, KAFKA_SASL_PASSWORD_FILE'],
    [{ ...scram, KAFKA_SASL_PASSWORD_FILE: missing }, 'KAFKA_SASL_PASSWORD_FILE'],
    [{ ...scram, KAFKA_SASL_PASSWORD_FILE: file('empty', '\n') }, 'KAFKA_SASL_PASSWORD_FILE'],
    [{ ...scram, KAFKA_SASL_PASSWORD: PASSWORD, KAFKA_SASL_OAUTH_TOKEN_FILE: passwordFile }, 'KAFKA_SASL_OAUTH_TOKEN_FILE'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer' }, 'KAFKA_SASL_OAUTH_TOKEN_URL'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: missing }, 'KAFKA_SASL_OAUTH_TOKEN_FILE'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: passwordFile, KAFKA_SASL_USERNAME: 'gateway' }, 'KAFKA_SASL_USERNAME'],
    [
      { ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: passwordFile, KAFKA_SASL_OAUTH_TOKEN_URL: 'https://idp/token' },
      'KAFKA_SASL_OAUTH_TOKEN_FILE, KAFKA_SASL_OAUTH_TOKEN_URL',
    ],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: passwordFile, KAFKA_SASL_OAUTH_CLIENT_ID: 'c' }, 'KAFKA_SASL_OAUTH_CLIENT_ID'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_URL: 'ftp://idp/token' }, 'KAFKA_SASL_OAUTH_TOKEN_URL'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_URL: 'https://idp/token' }, 'KAFKA_SASL_OAUTH_CLIENT_ID'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_URL: 'https://idp/token', KAFKA_SASL_OAUTH_CLIENT_ID: 'c' }, 'KAFKA_SASL_OAUTH_CLIENT_SECRET'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: passwordFile, KAFKA_SASL_OAUTH_EXTENSIONS: 'cluster' }, 'KAFKA_SASL_OAUTH_EXTENSIONS'],
    [{ ...kafka, KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_FILE: passwordFile, KAFKA_SASL_OAUTH_EXTENSIONS: 'auth=x' }, 'KAFKA_SASL_OAUTH_EXTENSIONS'],
    [{ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CA_FILE: tls('ca.pem'), AUTH_JWT_SECRET: SECRET }, 'CLICKHOUSE_CA_FILE'],
    [{ CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_CA_FILE: missing, AUTH_JWT_SECRET: SECRET }, 'CLICKHOUSE_CA_FILE'],
    [{ CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_PASSWORD: PASSWORD, CLICKHOUSE_PASSWORD_FILE: passwordFile, AUTH_JWT_SECRET: SECRET }, 'CLICKHOUSE_PASSWORD, CLICKHOUSE_PASSWORD_FILE'],
    [{ CLICKHOUSE_URL: 'https://ch:8443', CLICKHOUSE_PASSWORD_FILE: missing, AUTH_JWT_SECRET: SECRET }, 'CLICKHOUSE_PASSWORD_FILE'],
    [{ AUTH_JWT_SECRET: SECRET, AUTH_JWT_SECRET_FILE: passwordFile }, 'AUTH_JWT_SECRET, AUTH_JWT_SECRET_FILE'],
    [{ AUTH_JWT_SECRET_FILE: passwordFile, AUTH_JWKS_URL: 'https://idp/jwks' }, 'AUTH_JWT_SECRET_FILE, AUTH_JWKS_URL'],
    [{ AUTH_JWT_SECRET_FILE: missing }, 'AUTH_JWT_SECRET_FILE'],
    [{ AUTH_JWT_SECRET_FILE: file('empty-secret', '\n') }, 'AUTH_JWT_SECRET_FILE'],
    // The password file holds 30 bytes: too short for HS256 or a cursor key.
    [{ AUTH_JWT_SECRET_FILE: passwordFile }, 'AUTH_JWT_SECRET_FILE'],
    [{ AUTH_JWT_SECRET: SECRET, CURSOR_SECRET: SECRET, CURSOR_SECRET_FILE: passwordFile }, 'CURSOR_SECRET, CURSOR_SECRET_FILE'],
    [{ AUTH_JWT_SECRET: SECRET, CURSOR_SECRET_FILE: missing }, 'CURSOR_SECRET_FILE'],
    [{ AUTH_JWT_SECRET: SECRET, CURSOR_SECRET_FILE: passwordFile }, 'CURSOR_SECRET_FILE'],
  ] as const) {
    it(`stops naming ${variable}, without the secret, for ${Object.keys(env).filter((k) => !(k in kafka)).join(', ')}`, () => {
      const error = configRefusal(env);
      expect(error.variable).to.equal(variable);
      expect(error.message).to.match(new RegExp(`^${variable}: `));
      expect(error.message).not.to.include(PASSWORD);
    });
  }

  it('names the path of a file it cannot read, and says why', () => {
    expect(configRefusal({ ...kafka, KAFKA_SSL: 'true', KAFKA_SSL_CA_FILE: missing }).message).to.equal(`KAFKA_SSL_CA_FILE: cannot read ${missing}: no such file`);
  });
});
