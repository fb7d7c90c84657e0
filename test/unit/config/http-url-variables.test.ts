import { expect } from 'chai';
import { loadConfig } from '../../../src/config/config.js';

const SECRET = 's'.repeat(32);

/** Every variable that holds an http(s) URL is checked by one rule, with the same words, and never echoes the value (a URL may hold a password). */
describe('variables that hold an http(s) URL', () => {
  const cases: { env: Record<string, string>; line: string }[] = [
    { env: { CLICKHOUSE_URL: 'ftp://core:hunter2@ch' }, line: 'CLICKHOUSE_URL: must be an http:// or https:// URL' },
    { env: { CLICKHOUSE_URL: 'core ch 8123' }, line: 'CLICKHOUSE_URL: is not a URL' },
    {
      env: { CLICKHOUSE_URL: 'http://ch', CLICKHOUSE_CLUSTER: 'c', CLICKHOUSE_CLUSTER_REPLICATED: 'false', CLICKHOUSE_SHARD_URLS: 'http://a, ftp://core:hunter2@b' },
      line: 'CLICKHOUSE_SHARD_URLS: item 2 must be an http:// or https:// URL',
    },
    { env: { AUTH_JWT_SECRET: '', AUTH_JWKS_URL: 'file:///etc/keys' }, line: 'AUTH_JWKS_URL: must be an http:// or https:// URL' },
    {
      env: { KAFKA_BROKERS: 'k:9092', KAFKA_SASL_MECHANISM: 'oauthbearer', KAFKA_SASL_OAUTH_TOKEN_URL: 'not a url' },
      line: 'KAFKA_SASL_OAUTH_TOKEN_URL: is not a URL',
    },
  ];
  for (const { env, line } of cases) {
    it(`refuses ${Object.keys(env).at(-1)} as "${line}"`, () => {
      let message = '';
      try {
        loadConfig({ AUTH_JWT_SECRET: SECRET, ...env });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).to.contain(line);
      expect(message).not.to.contain('hunter2');
    });
  }
});
