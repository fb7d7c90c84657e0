import { expect } from 'chai';
import { deadLetterMessage, REFERENCE_PREFIX_BYTES } from '../../../src/ingest/dead-letter.js';
import { deadLetterSends } from '../../../src/ingest/dead-letter-writer.js';
import type { RejectedMessage } from '../../../src/ingest/event-ingestor.js';
import { recordBytes } from '../../../src/kafka/message-bytes.js';

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

describe('dead-letter sends', () => {
  const rejected = (value: string, key = 'dev-1'): RejectedMessage => ({
    message: { key, value, headers: { origin: 'sensor' }, source: { topic: 'platform.events', partition: 2, offset: '77' } },
    reason: 'schema-violation',
    detail: 'id is required',
  });

  it('cuts letters into sends that each stay within the budget, in order', () => {
    const letters = Array.from({ length: 10 }, (_, i) => rejected(`${i}`.repeat(300)));
    const budget = 4 * recordBytes(deadLetterMessage(letters[0]!));
    const { sends, references } = deadLetterSends(letters, budget);
    expect(references).to.equal(0);
    expect(sends.map((s) => s.length)).to.deep.equal([4, 4, 2]);
    for (const send of sends) expect(send.reduce((n, m) => n + recordBytes(m), 0)).to.be.at.most(budget);
    expect(sends.flat().map((m) => String(m.value))).to.deep.equal(letters.map((l) => l.message.value));
  });

  it('sends a letter too large for any send as a reference to its source, with its first bytes', () => {
    const huge = rejected('v'.repeat(50_000), 'k'.repeat(5000));
    const { sends, references } = deadLetterSends([rejected('small'), huge, rejected('small again')], 10_000);
    expect(references).to.equal(1);
    const reference = sends.flat()[1]!;
    expect(recordBytes(reference)).to.be.at.most(10_000);
    expect((reference.value as Buffer).toString()).to.equal('v'.repeat(REFERENCE_PREFIX_BYTES));
    expect((reference.key as Buffer).toString()).to.equal('k'.repeat(REFERENCE_PREFIX_BYTES));
    expect(reference.headers).to.deep.equal({
      'dlq-reason': 'schema-violation',
      'dlq-detail': 'id is required',
      'dlq-source-topic': 'platform.events',
      'dlq-source-partition': '2',
      'dlq-source-offset': '77',
      'dlq-truncated': 'true',
      'dlq-original-value-bytes': '50000',
      'dlq-original-key-bytes': '5000',
    });
  });
});
