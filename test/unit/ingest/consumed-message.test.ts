import { expect } from 'chai';
import type { KafkaMessage } from 'kafkajs';
import { ConsumedMessage } from '../../../src/ingest/consumed-message.js';
import { deadLetterMessage } from '../../../src/ingest/dead-letter.js';

/** A record as kafkajs hands it to eachBatch. */
function fetched(overrides: Partial<KafkaMessage> = {}): KafkaMessage {
  return {
    key: Buffer.from('dev-1'),
    value: Buffer.from('{"id":1}'),
    timestamp: '1767225600000',
    attributes: 0,
    offset: '41',
    headers: { origin: Buffer.from('sensor'), trace: [Buffer.from('a'), Buffer.from('b')] },
    ...overrides,
  } as KafkaMessage;
}

describe('consumed message', () => {
  it('reads as the message it wraps: value, key, first header values, and where it came from', () => {
    const message = new ConsumedMessage('canonical-event', fetched(), 'platform.events', 3);
    expect(message.format).to.equal('canonical-event');
    expect(message.value).to.deep.equal(Buffer.from('{"id":1}'));
    expect(message.key).to.deep.equal(Buffer.from('dev-1'));
    expect(message.headers).to.deep.equal({ origin: Buffer.from('sensor'), trace: Buffer.from('a') });
    expect(message.source).to.deep.equal({ topic: 'platform.events', partition: 3, offset: '41' });
  });

  it('goes to the dead-letter topic as it came, with its source', () => {
    const message = new ConsumedMessage('enrollment-command', fetched({ key: null, headers: {} }), 'core.enrollments', 0);
    expect(deadLetterMessage({ message, reason: 'invalid-json', detail: 'not JSON' })).to.deep.equal({
      key: null,
      value: Buffer.from('{"id":1}'),
      headers: {
        'dlq-reason': 'invalid-json',
        'dlq-detail': 'not JSON',
        'dlq-source-topic': 'core.enrollments',
        'dlq-source-partition': '0',
        'dlq-source-offset': '41',
      },
    });
  });

  it('builds its headers once, however often they are read', () => {
    const message = new ConsumedMessage('canonical-event', fetched(), 'platform.events', 0);
    expect(message.headers).to.equal(message.headers);
  });
});
