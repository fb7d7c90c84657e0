import { expect } from 'chai';
import { createReadGaps } from '../../../src/ingest/read-gaps.js';

describe('read gaps', () => {
  it('reports the offsets between a committed offset and a first batch fetched past it, both ends included', () => {
    const gaps = createReadGaps();
    gaps.expect('t', 0, 3n);
    expect(gaps.read('t', 0, 7n, 10n)).to.deep.equal({ topic: 't', partition: 0, first: 3n, last: 6n, count: 4n });
    // Reading then goes on from the batch's end, with nothing more to report.
    expect(gaps.read('t', 0, 10n, 12n)).to.equal(undefined);
  });

  it('reports nothing for a batch fetched where reading was expected to go on', () => {
    const gaps = createReadGaps();
    gaps.expect('t', 0, 3n);
    expect(gaps.read('t', 0, 3n, 10n)).to.equal(undefined);
  });

  it('reports a jump between two batches of a running generation, as after kafkajs moved a deleted position to the log start', () => {
    const gaps = createReadGaps();
    expect(gaps.read('t', 1, 0n, 5n), 'a partition with no committed offset has no position to compare').to.equal(undefined);
    expect(gaps.read('t', 1, 9n, 12n)).to.deep.equal({ topic: 't', partition: 1, first: 5n, last: 8n, count: 4n });
  });

  it('takes a batch that starts below the expected position (a committed offset past the end, read again from the start) as no gap', () => {
    const gaps = createReadGaps();
    gaps.expect('t', 0, 50n);
    expect(gaps.read('t', 0, 0n, 20n)).to.equal(undefined);
    expect(gaps.read('t', 0, 20n, 30n)).to.equal(undefined);
  });

  it('keeps partitions and topics apart', () => {
    const gaps = createReadGaps();
    gaps.expect('t', 0, 3n);
    gaps.expect('u', 0, 100n);
    expect(gaps.read('t', 1, 40n, 41n)).to.equal(undefined);
    expect(gaps.read('u', 0, 100n, 101n)).to.equal(undefined);
    expect(gaps.read('t', 0, 4n, 5n)).to.deep.include({ first: 3n, last: 3n, count: 1n });
  });

  it('forgets every position at a rebalance, so a batch of the next generation is compared with its own committed offset only', () => {
    const gaps = createReadGaps();
    gaps.expect('t', 0, 3n);
    gaps.clear();
    expect(gaps.read('t', 0, 7n, 10n)).to.equal(undefined);
  });
});
