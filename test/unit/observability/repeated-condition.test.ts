import { expect } from 'chai';
import { causeText, createRepeatedCondition, SUMMARY_EVERY_MS } from '../../../src/observability/repeated-condition.js';
import { capturedLogger } from '../../support/captured-logger.js';

/** A condition on a clock the test moves, with the lines it writes. */
function condition() {
  let now = 1_000_000;
  const { logger, lines } = capturedLogger('info');
  const stall = createRepeatedCondition({ logger, what: 'the store refuses batches', now: () => now });
  return { stall, lines, advance: (ms: number) => (now += ms), at: () => now };
}

describe('a repeated condition, logged as an operator reads an outage', () => {
  it('writes at most a line a summary period through a minute of retries from twelve partitions, and one when it ends', () => {
    const { stall, lines, advance, at } = condition();
    // The oldest message the batches hold was written 5 s before the outage began.
    const heldSince = at() - 5000;
    let occurrences = 0;
    // Twelve partitions' batches, each retried every 100 ms for a minute.
    for (let tick = 0; tick < 600; tick += 1) {
      for (let partition = 0; partition < 12; partition += 1) {
        stall.occurred(new Error('connect ECONNREFUSED'), { partition }, heldSince);
        occurrences += 1;
      }
      advance(100);
    }
    stall.ended();
    const messages = lines.map((l) => l['msg']);
    expect(messages[0]).to.equal('the store refuses batches: began; retrying');
    expect(messages.at(-1)).to.equal('the store refuses batches: ended');
    expect(messages.slice(1, -1)).to.satisfy((middle: unknown[]) => middle.every((m) => m === 'the store refuses batches: still retrying'));
    // One line to begin, one a period while it lasts (at 10, 20, 30, 40 and 50 s), one to end: 7 in a minute, not 7,200.
    expect(SUMMARY_EVERY_MS).to.equal(10_000);
    expect(lines).to.have.length(7);
    expect(lines.at(-1)).to.include({ occurrences, lastingMs: 60_000, level: 30 });
    // Every summary counts what it stands for, and says how old the oldest held message is.
    const summaries = lines.slice(1, -1);
    expect(summaries.reduce((sum, l) => sum + Number(l['occurrences']), 0)).to.be.at.most(occurrences);
    expect(summaries.at(-1)).to.include({ cause: 'connect ECONNREFUSED', oldestHeldMs: 55_000, lastingMs: 50_000 });
    // No stack in any line: a warning a period, not an error with a trace a retry.
    for (const line of lines) expect(line).to.not.have.any.keys('err', 'stack');
    expect(lines.filter((l) => Number(l['level']) >= 50)).to.deep.equal([]);
  });

  it('writes nothing to end what never began, and begins again after it ended', () => {
    const { stall, lines, advance } = condition();
    stall.ended();
    expect(lines).to.deep.equal([]);
    stall.occurred('refused');
    expect(stall.active).to.equal(true);
    advance(10);
    stall.ended({ partition: 3 });
    expect(stall.active).to.equal(false);
    stall.occurred('refused again');
    expect(lines.map((l) => l['msg'])).to.deep.equal([
      'the store refuses batches: began; retrying',
      'the store refuses batches: ended',
      'the store refuses batches: began; retrying',
    ]);
    expect(lines[1]).to.include({ occurrences: 1, lastingMs: 10, partition: 3 });
    expect(lines[2]).to.include({ cause: 'refused again' });
  });

  it('names the cause and the causes under it, as text', () => {
    const inner = new Error('Timeout error.');
    expect(causeText(new Error('event store unavailable during insert', { cause: inner }))).to.equal('event store unavailable during insert: Timeout error.');
    expect(causeText('plain')).to.equal('plain');
  });
});
