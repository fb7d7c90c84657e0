import { expect } from 'chai';
import { deadLetterMessage } from '../../../src/ingest/dead-letter.js';

describe('dead-letter message', () => {
  it('keeps key, value and headers as received and adds reason, detail and source', () => {
    const message = deadLetterMessage({
      message: { key: 'dev-1', value: Buffer.from('{oops'), headers: { origin: 'sensor' }, source: { topic: 'platform.events', partition: 4, offset: '1234' } },
      reason: 'invalid-json',
      detail: 'message value is not JSON',
    });
    expect(message).to.deep.equal({
      key: 'dev-1',
      value: Buffer.from('{oops'),
      headers: {
        origin: 'sensor',
        'dlq-reason': 'invalid-json',
        'dlq-detail': 'message value is not JSON',
        'dlq-source-topic': 'platform.events',
        'dlq-source-partition': '4',
        'dlq-source-offset': '1234',
      },
    });
  });

  it('lets our headers win over same-named ones it received, and bounds the detail', () => {
    const message = deadLetterMessage({
      message: { value: 'x', headers: { 'dlq-reason': 'forged' } },
      reason: 'schema-violation',
      detail: 'y'.repeat(5000),
    });
    expect(message.key).to.equal(null);
    expect(message.headers?.['dlq-reason']).to.equal('schema-violation');
    expect(String(message.headers?.['dlq-detail'])).to.have.length(1000);
  });
});
