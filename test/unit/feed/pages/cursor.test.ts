import { expect } from 'chai';
import { createHmac } from 'node:crypto';
import { createCursorCodec, type CursorScope } from '../../../../src/feed/pages/cursor.js';
import { AppError } from '../../../../src/errors/app-error.js';

const key = Buffer.alloc(32, 7);
const codec = createCursorCodec(key);
const scope: CursorScope = {
  orgId: '11111111-1111-4111-8111-111111111111',
  projectId: '22222222-2222-4222-8222-222222222222',
  filters: { domain: 'devices' },
};
const position = { occurredAt: '2026-01-02 03:04:05.123456', id: '33333333-3333-4333-8333-333333333333' };

function rejects(fn: () => unknown): void {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(AppError);
    expect((error as AppError).code).to.equal('INVALID_CURSOR');
    expect((error as AppError).status).to.equal(400);
    return;
  }
  throw new Error('expected INVALID_CURSOR');
}

describe('cursor codec', () => {
  it('round-trips a position under the same scope', () => {
    expect(codec.decode(codec.encode(position, scope), scope)).to.deep.equal(position);
  });

  it('binds the time bounds into the scope, and leaves cursors issued without them valid', () => {
    // A cursor exactly as it was signed before the bounds existed.
    const body = Buffer.from(`${position.occurredAt}|${position.id}`).toString('base64url');
    const oldScope = JSON.stringify([scope.orgId, scope.projectId, 'devices', null, null, null, null]);
    const oldMac = createHmac('sha256', key).update(`v1\n${body}\n${oldScope}`).digest().subarray(0, 16).toString('base64url');
    const issued = `v1.${body}.${oldMac}`;
    expect(codec.encode(position, scope)).to.equal(issued);
    expect(codec.decode(issued, { ...scope, filters: { ...scope.filters, since: undefined, until: undefined } })).to.deep.equal(position);

    const bounded = { ...scope, filters: { ...scope.filters, since: '2026-01-01 00:00:00.000000' } };
    expect(codec.decode(codec.encode(position, bounded), bounded)).to.deep.equal(position);
    rejects(() => codec.decode(issued, bounded));
    rejects(() => codec.decode(codec.encode(position, bounded), { ...scope, filters: { ...scope.filters, until: '2026-01-01 00:00:00.000000' } }));
  });

  it('is URL-safe', () => {
    expect(codec.encode(position, scope)).to.match(/^[A-Za-z0-9._-]+$/);
  });

  it('rejects another project, organization or filter set', () => {
    const token = codec.encode(position, scope);
    rejects(() => codec.decode(token, { ...scope, projectId: '44444444-4444-4444-8444-444444444444' }));
    rejects(() => codec.decode(token, { ...scope, orgId: '44444444-4444-4444-8444-444444444444' }));
    rejects(() => codec.decode(token, { ...scope, filters: {} }));
    rejects(() => codec.decode(token, { ...scope, filters: { domain: 'devices', action: 'queued' } }));
  });

  it('tells a filter value from the same text in another filter', () => {
    const token = codec.encode(position, { ...scope, filters: { domain: 'x' } });
    rejects(() => codec.decode(token, { ...scope, filters: { entity: 'x' } }));
  });

  it('rejects a cursor made with another key', () => {
    const other = createCursorCodec(Buffer.alloc(32, 8));
    rejects(() => codec.decode(other.encode(position, scope), scope));
  });

  it('rejects a forged position even with a well-formed layout', () => {
    const [, , mac] = codec.encode(position, scope).split('.');
    const forged = Buffer.from(`2030-01-01 00:00:00.000000|${position.id}`).toString('base64url');
    rejects(() => codec.decode(`v1.${forged}.${mac}`, scope));
  });

  // Found by the fuzz suite: Node's base64url decoder ignores padding, characters outside
  // the alphabet and the spare bits of the last character, so these decoded to the issued MAC.
  it('rejects another spelling of the same MAC', () => {
    const token = codec.encode(position, scope);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // The last of 22 characters carries 2 bits of the 16-byte MAC; its lowest bit is spare.
    const spareBitFlipped = `${token.slice(0, -1)}${alphabet[alphabet.indexOf(token.at(-1)!) ^ 1]!}`;
    const tagOf = (t: string) => Buffer.from(t.split('.')[2]!, 'base64url');
    expect(tagOf(spareBitFlipped)).to.deep.equal(tagOf(token));
    for (const respelled of [`${token}=`, `${token}==`, `${token.slice(0, -1)}!${token.at(-1)!}`, spareBitFlipped]) {
      rejects(() => codec.decode(respelled, scope));
    }
  });

  it('rejects junk', () => {
    for (const junk of ['', 'v1', 'v1.a', 'v1.a.b.c', 'v0.a.b', '....']) rejects(() => codec.decode(junk, scope));
  });

  it('refuses a short key', () => {
    expect(() => createCursorCodec(Buffer.alloc(16))).to.throw(/32 bytes/);
  });
});
