import { expect } from 'chai';
import { hasConfluentPrefix, stripConfluentPrefix } from '../../../src/dead-letters/confluent-prefix.js';
import { readDeadLetter } from '../../../src/dead-letters/dead-letter.js';
import { replayMessage, transformedValue } from '../../../src/dead-letters/replay-message.js';
import { runName } from '../../../src/dead-letters/replay.js';
import { SELECT_ALL } from '../../../src/dead-letters/selection.js';
import { confluentFramed, deadLetterRecord } from './dead-letter-factory.js';

describe('a replayed message', () => {
  const payload = Buffer.from('{"id":"x"}');

  it('strips Confluent\'s prefix when present, and leaves anything else as it is', () => {
    expect(stripConfluentPrefix(confluentFramed(payload))).to.deep.equal(payload);
    expect(stripConfluentPrefix(payload)).to.deep.equal(payload);
    // Five bytes with nothing after them are not a framed payload.
    expect(hasConfluentPrefix(Buffer.from([0, 0, 0, 0, 1]))).to.equal(false);
    expect(stripConfluentPrefix(Buffer.alloc(0))).to.deep.equal(Buffer.alloc(0));
  });

  it('applies the transform only when named', () => {
    const letter = readDeadLetter(deadLetterRecord({ value: confluentFramed(payload) }));
    expect(transformedValue(letter, { stripConfluentPrefix: true })).to.deep.equal(payload);
    expect(transformedValue(letter, { stripConfluentPrefix: false })).to.deep.equal(confluentFramed(payload));
    expect(transformedValue(readDeadLetter(deadLetterRecord({ value: null })), { stripConfluentPrefix: true })).to.equal(null);
  });

  it('keeps key and the original headers, drops the dead-letter headers, counts the replay', () => {
    const record = deadLetterRecord({ value: confluentFramed(payload), headers: { traceparent: Buffer.from('00-abc-01'), 'dlq-truncated': 'false', 'x-bin': Buffer.from([0xff]) } });
    const message = replayMessage(readDeadLetter(record), { stripConfluentPrefix: true });
    expect(message.key).to.deep.equal(Buffer.from('a-key'));
    expect(message.value).to.deep.equal(payload);
    expect(message.headers).to.deep.equal({ traceparent: Buffer.from('00-abc-01'), 'x-bin': Buffer.from([0xff]), 'dlq-replay-count': '1' });
  });

  it('increments a replay count already there', () => {
    const letter = readDeadLetter(deadLetterRecord({ headers: { 'dlq-replay-count': Buffer.from('2') } }));
    expect(letter.replayCount).to.equal(2);
    expect(replayMessage(letter, { stripConfluentPrefix: false }).headers?.['dlq-replay-count']).to.equal('3');
    expect(readDeadLetter(deadLetterRecord({ headers: { 'dlq-replay-count': 'garbage' } })).replayCount).to.equal(0);
  });

  it('names a run by its selection, target and transform unless named on the command line', () => {
    const base = { selection: SELECT_ALL, transforms: { stripConfluentPrefix: false }, to: undefined, run: undefined };
    expect(runName(base)).to.equal(runName({ ...base }));
    expect(runName(base)).not.to.equal(runName({ ...base, selection: { ...SELECT_ALL, reasons: ['invalid-json'] } }));
    expect(runName(base)).not.to.equal(runName({ ...base, to: 'elsewhere' }));
    expect(runName(base)).not.to.equal(runName({ ...base, transforms: { stripConfluentPrefix: true } }));
    expect(runName({ ...base, run: 'fix-1' })).to.equal('fix-1');
  });
});
