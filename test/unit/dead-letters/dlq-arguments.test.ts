import { expect } from 'chai';
import { DEFAULT_MAX_REPLAYS, parseDlqArguments, UsageError } from '../../../src/dead-letters/dlq-arguments.js';
import { SELECT_ALL } from '../../../src/dead-letters/selection.js';

describe('dlq command line', () => {
  it('replay with no selection selects everything, sends to the source, with the default loop guard', () => {
    expect(parseDlqArguments(['replay'])).to.deep.equal({
      kind: 'replay',
      selection: SELECT_ALL,
      transforms: { stripConfluentPrefix: false },
      to: undefined,
      maxReplays: DEFAULT_MAX_REPLAYS,
      ratePerSecond: undefined,
      run: undefined,
    });
  });

  it('reads every selection option', () => {
    const command = parseDlqArguments([
      'replay', '--reason', 'invalid-json', '--reason', 'schema-violation', '--reason', 'invalid-json',
      '--since', '2026-05-01T00:00:00Z', '--until', '2026-05-02T00:00:00Z',
      '--source-topic', 'platform.events', '--source-partition', '3', '--source-offsets', '10-20',
      '--org', 'o1', '--project', 'p1', '--to', 'platform.events.replayed',
      '--strip-confluent-prefix', '--max-replays', '5', '--rate', '200', '--run', 'fix-1',
    ]);
    expect(command).to.deep.equal({
      kind: 'replay',
      selection: {
        reasons: ['invalid-json', 'schema-violation'],
        sinceMs: Date.parse('2026-05-01T00:00:00Z'),
        untilMs: Date.parse('2026-05-02T00:00:00Z'),
        sourceTopic: 'platform.events',
        sourcePartition: 3,
        sourceOffsets: { from: 10n, to: 20n },
        org: 'o1',
        project: 'p1',
      },
      transforms: { stripConfluentPrefix: true },
      to: 'platform.events.replayed',
      maxReplays: 5,
      ratePerSecond: 200,
      run: 'fix-1',
    });
  });

  it('inspect takes the transform and nothing of a selection', () => {
    expect(parseDlqArguments(['inspect', '--strip-confluent-prefix'])).to.deep.equal({ kind: 'inspect', transforms: { stripConfluentPrefix: true } });
    expect(() => parseDlqArguments(['inspect', '--reason', 'invalid-json'])).to.throw(UsageError, /takes no --reason/);
  });

  const refusals: [string[], RegExp][] = [
    [[], /name one command/],
    [['redrive'], /unknown command "redrive"/],
    [['replay', '--since', 'yesterday'], /--since: "yesterday" is not an ISO 8601 time/],
    [['replay', '--since', '2026-05-02T00:00:00Z', '--until', '2026-05-01T00:00:00Z'], /--since must come before --until/],
    [['replay', '--source-offsets', '20-10'], /20 comes after 10/],
    [['replay', '--source-offsets', '10'], /is not FROM-TO/],
    [['replay', '--source-partition=-1'], /--source-partition: "-1" is not a whole number/],
    [['replay', '--max-replays', '0'], /--max-replays: "0" is not a whole number of at least 1/],
    [['replay', '--rate', '1.5'], /--rate/],
    [['replay', '--to', 'no spaces'], /--to: "no spaces" is not a Kafka topic name/],
    [['replay', '--frobnicate'], /frobnicate/],
  ];
  for (const [args, message] of refusals) {
    it(`refuses ${JSON.stringify(args)}`, () => {
      expect(() => parseDlqArguments(args)).to.throw(UsageError, message);
    });
  }
});
