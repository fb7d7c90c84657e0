import { expect } from 'chai';
import { fromStoreTimestamp, TimestampError, toStoreTimestamp } from '../../../src/store/timestamps.js';

describe('store timestamps', () => {
  const cases: [string, string][] = [
    ['2026-01-02T03:04:05Z', '2026-01-02 03:04:05.000000'],
    ['2026-01-02T03:04:05.1Z', '2026-01-02 03:04:05.100000'],
    ['2026-01-02T03:04:05.123456Z', '2026-01-02 03:04:05.123456'],
    ['2026-01-02T03:04:05.123456789Z', '2026-01-02 03:04:05.123456'],
    ['2026-01-02t03:04:05z', '2026-01-02 03:04:05.000000'],
    ['2026-01-02T01:04:05.5+02:00', '2026-01-01 23:04:05.500000'],
    ['2026-01-01T23:30:00-01:45', '2026-01-02 01:15:00.000000'],
    ['2016-12-31T23:59:60Z', '2017-01-01 00:00:00.000000'],
  ];
  for (const [input, stored] of cases) {
    it(`stores ${input} as ${stored}`, () => expect(toStoreTimestamp(input)).to.equal(stored));
  }

  it('keeps microseconds through a round trip', () => {
    expect(fromStoreTimestamp(toStoreTimestamp('2026-05-06T07:08:09.000123Z'))).to.equal('2026-05-06T07:08:09.000123Z');
  });

  for (const bad of ['2026-01-02', '2026-01-02T03:04:05', 'yesterday', '1899-12-31T23:59:59Z', '2300-01-01T00:00:00Z']) {
    it(`refuses ${bad}`, () => expect(() => toStoreTimestamp(bad)).to.throw(TimestampError));
  }

  it('refuses text that is not a stored value', () => {
    expect(() => fromStoreTimestamp('2026-01-02T03:04:05Z')).to.throw(TimestampError);
  });
});
