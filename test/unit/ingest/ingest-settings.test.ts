import { expect } from 'chai';
import { parseIngest } from '../../../src/ingest/ingest-settings.js';
import { ConfigError } from '../../../src/settings/config-error.js';

describe('INGEST_TRANSACTIONAL_ID_PREFIX', () => {
  it('is unset by default, for the consumer to name its ids after its group', () => {
    expect(parseIngest({}).transactionalIdPrefix).to.equal(undefined);
    expect(parseIngest({ INGEST_TRANSACTIONAL_ID_PREFIX: '  ' }).transactionalIdPrefix).to.equal(undefined);
  });

  it('takes a prefix an operator grants ACLs on', () => {
    expect(parseIngest({ INGEST_TRANSACTIONAL_ID_PREFIX: 'tenant-a.ingest.' }).transactionalIdPrefix).to.equal('tenant-a.ingest.');
  });

  it('refuses one with spaces, or too long to leave room for a topic and partition', () => {
    expect(() => parseIngest({ INGEST_TRANSACTIONAL_ID_PREFIX: 'a b' })).to.throw(ConfigError, 'INGEST_TRANSACTIONAL_ID_PREFIX');
    expect(() => parseIngest({ INGEST_TRANSACTIONAL_ID_PREFIX: 'x'.repeat(201) })).to.throw(ConfigError, 'INGEST_TRANSACTIONAL_ID_PREFIX');
  });
});
