import { expect } from 'chai';
import { decodeTailPosition, encodeTailPosition } from '../../../../src/feed/tail/tail-position.js';

const position = { ingestedAt: '2026-05-01 10:00:00.123', id: '0f8e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5b' };

describe('live-tail position token', () => {
  it('round-trips ingested_at to the millisecond and the id, in 34 url-safe characters', () => {
    const token = encodeTailPosition(position);
    expect(token).to.match(/^[A-Za-z0-9_-]{34}$/);
    expect(decodeTailPosition(token)).to.deep.equal(position);
    for (const ingestedAt of ['1900-01-01 00:00:00.000', '1969-12-31 23:59:59.999', '2299-12-31 23:59:59.999']) {
      expect(decodeTailPosition(encodeTailPosition({ ...position, ingestedAt }))).to.deep.equal({ ...position, ingestedAt });
    }
  });

  it('gives distinct tokens to distinct positions', () => {
    const later = { ...position, ingestedAt: '2026-05-01 10:00:00.124' };
    const other = { ...position, id: '0f8e2a4c-1b3d-4e5f-8a9b-0c1d2e3f4a5c' };
    expect(new Set([position, later, other].map(encodeTailPosition)).size).to.equal(3);
  });

  it('refuses anything it did not issue', () => {
    const token = encodeTailPosition(position);
    const bytes = Buffer.from(token, 'base64url');
    const withVersion = (v: number) => Buffer.concat([Buffer.from([v]), bytes.subarray(1)]).toString('base64url');
    const withMillis = (ms: bigint) => {
      const copy = Buffer.from(bytes);
      copy.writeBigInt64BE(ms, 1);
      return copy.toString('base64url');
    };
    const last = token.at(-1)!;
    // The last character carries 2 bits of data and 4 unused ones; another spelling of the same bytes is refused.
    const alias = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.split('').find((c) => c !== last && Buffer.from(`${token.slice(0, -1)}${c}`, 'base64url').equals(bytes))!;
    expect(alias, 'another spelling of the last character').to.be.a('string');
    for (const junk of [
      '',
      'x',
      token.slice(0, -1),
      `${token}A`,
      `${token.slice(0, -1)}=`,
      `${token.slice(0, 10)}+${token.slice(11)}`,
      `${token.slice(0, -1)}${alias}`,
      withVersion(0),
      withVersion(2),
      withMillis(BigInt(Date.UTC(1899, 11, 31, 23, 59, 59, 999))),
      withMillis(BigInt(Date.UTC(2300, 0, 1))),
      withMillis(-(2n ** 63n)),
    ]) {
      expect(decodeTailPosition(junk), JSON.stringify(junk)).to.equal(undefined);
    }
  });

  it('refuses to encode what is not a store position', () => {
    expect(() => encodeTailPosition({ ...position, ingestedAt: '2026-05-01T10:00:00Z' })).to.throw(/DateTime64/);
    expect(() => encodeTailPosition({ ...position, id: 'nope' })).to.throw(/uuid/);
  });
});
