import { expect } from 'chai';
import { DEFAULT_MAX_BUFFERED_BYTES, parseIngest } from '../../../src/ingest/ingest-settings.js';
import { fetchBytes } from '../../../src/ingest/kafka-ingest-consumer.js';
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

describe('INGEST_MAX_BUFFERED_BYTES', () => {
  it('is the documented default unless set', () => {
    expect(parseIngest({}).maxBufferedBytes).to.equal(DEFAULT_MAX_BUFFERED_BYTES);
    expect(parseIngest({ INGEST_MAX_BUFFERED_BYTES: '268435456' }).maxBufferedBytes).to.equal(256 * 1024 * 1024);
  });

  it('refuses a budget below one fetch of the default size, naming the variable', () => {
    expect(() => parseIngest({ INGEST_MAX_BUFFERED_BYTES: '1048576' })).to.throw(ConfigError, 'INGEST_MAX_BUFFERED_BYTES');
  });
});

describe('fetch sizes under the byte budget', () => {
  const MiB = 1024 * 1024;

  it('asks for eight partitions of a fetch when the budget is far above it, as without a budget', () => {
    expect(fetchBytes(MiB, 1024 * MiB)).to.deep.equal(fetchBytes(MiB));
    expect(fetchBytes(MiB).maxBytes).to.equal(8 * MiB);
  });

  it('asks for at most an eighth of the budget, so one decoded fetch overruns it by little', () => {
    expect(fetchBytes(MiB, 32 * MiB).maxBytes).to.equal(4 * MiB);
  });

  it('never asks for less than one partition’s share, so a record batch still comes whole', () => {
    const fetch = fetchBytes(4 * MiB, 16 * MiB);
    expect(fetch.maxBytes).to.equal(4 * MiB);
    expect(fetch.maxBytesPerPartition).to.equal(4 * MiB);
  });
});
