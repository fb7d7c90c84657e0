import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/config.js';

const SECRET = 's'.repeat(32);

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives the embedded defaults with nothing set', () => {
    const config = loadConfig({});
    expect(config).to.deep.include({ role: 'all', port: 8080, dataDir: './data', kafka: undefined, clickhouse: undefined });
    expect(config.auth).to.deep.equal({ kind: 'development' });
    expect(config.topics).to.deep.equal({
      events: ['platform.events'],
      enrollmentCommands: 'core.device-enrollment.commands',
      edgePolicyCommands: 'core.edge-policy.commands',
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
    expect(config.clickhouse).to.deep.equal({ url: 'http://ch:8123', username: 'u@x', password: 'p:w', database: 'telemetry', requestTimeoutMs: 10_000, cluster: undefined });
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
    [{ AUTH_JWT_SECRET: SECRET, AUTH_JWKS_URL: 'https://idp/jwks' }, 'AUTH_JWT_SECRET, AUTH_JWKS_URL'],
    [{ KAFKA_BROKERS: 'k:9092' }, 'AUTH_JWT_SECRET'],
    [{ EVENTS_TOPICS: 'ok,bad topic' }, 'EVENTS_TOPICS'],
    [{ EVENTS_TOPICS: 'platform.events,core.device-enrollment.commands' }, 'EVENTS_TOPICS'],
    [{ EVENTS_TOPICS: 'my.policies', EDGE_POLICY_COMMANDS_TOPIC: 'my.policies' }, 'EVENTS_TOPICS'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ CURSOR_SECRET: 'short' }, 'CURSOR_SECRET'],
    [{ COMMAND_TIMEOUT_MS: '5' }, 'COMMAND_TIMEOUT_MS'],
    [{ SHUTDOWN_GRACE_MS: 'soon' }, 'SHUTDOWN_GRACE_MS'],
    [{ PORT: '9000', OPS_PORT: '9000' }, 'OPS_PORT'],
    [{ OPS_PORT: 'ops' }, 'OPS_PORT'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_REQUEST_TIMEOUT_MS: '10s' }, 'CLICKHOUSE_REQUEST_TIMEOUT_MS'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER: 'a b' }, 'CLICKHOUSE_CLUSTER'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER: 'c', CLICKHOUSE_CLUSTER_REPLICATED: 'no' }, 'CLICKHOUSE_CLUSTER_REPLICATED'],
    [{ CLICKHOUSE_URL: 'http://ch', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER_REPLICATED: 'false' }, 'CLICKHOUSE_CLUSTER_REPLICATED'],
  ] as const) {
    it(`stops with one message naming ${variable} for ${JSON.stringify(env)}`, () => {
      const error = configError(env);
      expect(error.variable).to.equal(variable);
      expect(error.message).to.match(new RegExp(`^${variable}: `));
    });
  }

  it('reads a ClickHouse cluster, replicated unless told otherwise', () => {
    const base = { CLICKHOUSE_URL: 'http://ch:8123', AUTH_JWT_SECRET: SECRET, CLICKHOUSE_CLUSTER: 'telemetry' };
    expect(loadConfig(base).clickhouse?.cluster).to.deep.equal({ name: 'telemetry', replicated: true });
    expect(loadConfig({ ...base, CLICKHOUSE_CLUSTER_REPLICATED: 'false' }).clickhouse?.cluster).to.deep.equal({ name: 'telemetry', replicated: false });
  });

  it('allows split roles only with Kafka and a ClickHouse server', () => {
    const config = loadConfig({ ROLE: 'consumer', KAFKA_BROKERS: 'k:9092', CLICKHOUSE_URL: 'http://ch:8123', AUTH_JWT_SECRET: SECRET });
    expect(config.role).to.equal('consumer');
    expect(configError({ ROLE: 'consumer', CLICKHOUSE_URL: 'http://ch:8123', AUTH_JWT_SECRET: SECRET }).variable).to.equal('ROLE');
  });

  it('accepts a one-line PEM with \\n escapes', () => {
    const config = loadConfig({ AUTH_PUBLIC_KEY: '-----BEGIN PUBLIC KEY-----\\nMFk=\\n-----END PUBLIC KEY-----' });
    expect(config.auth).to.deep.equal({ kind: 'public-key', pem: '-----BEGIN PUBLIC KEY-----\nMFk=\n-----END PUBLIC KEY-----' });
  });
});
