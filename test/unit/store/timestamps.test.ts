import { expect } from 'chai';
import fc from 'fast-check';
import { fromStoreTimestamp, microsStoreText, storeTextMicros, TimestampError, toStoreTimestamp } from '../../../src/store/timestamps.js';

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
    ['2026-01-02 03:04:05Z', '2026-01-02 03:04:05.000000'],
    ['2024-02-29T12:00:00Z', '2024-02-29 12:00:00.000000'],
    // A day past the month's end rolls over, as Date.UTC rolls it.
    ['2023-02-29T12:00:00Z', '2023-03-01 12:00:00.000000'],
    ['2026-04-31T00:00:00.5Z', '2026-05-01 00:00:00.500000'],
    ['2100-02-29T00:00:00Z', '2100-03-01 00:00:00.000000'],
    ['2000-02-29T00:00:00Z', '2000-02-29 00:00:00.000000'],
    ['1900-01-01T00:00:00Z', '1900-01-01 00:00:00.000000'],
    ['2299-12-31T23:59:59.999999Z', '2299-12-31 23:59:59.999999'],
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

  // Date.UTC reads years 0-99 as 1900-1999: these once became 1901, 1999 and 1950.
  for (const early of ['0001-01-01T00:00:00Z', '0099-12-31T23:59:59Z', '0050-06-01T12:00:00+01:00', '0000-01-01T00:00:00.5Z']) {
    it(`reads ${early} as the year written, and so refuses it`, () => {
      expect(() => toStoreTimestamp(early)).to.throw(TimestampError, /outside 1900\.\.2299/);
    });
  }

  it('reads an offset that crosses into 1899 as 1899', () => {
    expect(() => toStoreTimestamp('1900-01-01T00:30:00+01:00')).to.throw(TimestampError);
  });

  it('gives the text Date gives for any UTC instant in range, to the microsecond', () => {
    fc.assert(
      fc.property(fc.date({ min: new Date('1900-01-01T00:00:00Z'), max: new Date('2299-12-31T23:59:59.999Z'), noInvalidDate: true }), fc.integer({ min: 0, max: 999 }), (date, micros) => {
        const iso = date.toISOString();
        const text = `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
        expect(toStoreTimestamp(text)).to.equal(`${iso.slice(0, 10)} ${iso.slice(11, 23)}${String(micros).padStart(3, '0')}`);
      }),
    );
  });

  it('refuses text that is not a stored value', () => {
    expect(() => fromStoreTimestamp('2026-01-02T03:04:05Z')).to.throw(TimestampError);
  });

  it('counts stored text in microseconds since the epoch and back, exactly, over the whole of DateTime64(6)', () => {
    expect(storeTextMicros('1970-01-01 00:00:01.000002')).to.equal(1_000_002);
    expect(storeTextMicros('1969-12-31 23:59:59.999999')).to.equal(-1);
    expect(microsStoreText(-1)).to.equal('1969-12-31 23:59:59.999999');
    const [first, last] = [storeTextMicros('1900-01-01 00:00:00.000000'), storeTextMicros('2299-12-31 23:59:59.999999')];
    fc.assert(
      fc.property(fc.integer({ min: first, max: last }), (micros) => {
        const text = microsStoreText(micros);
        expect(text).to.match(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{6}$/);
        expect(storeTextMicros(text)).to.equal(micros);
      }),
    );
  });
});
