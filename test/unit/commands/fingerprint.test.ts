import { expect } from 'chai';
import { canonicalJson, fingerprint } from '../../../src/commands/fingerprint.js';

describe('request fingerprint', () => {
  it('ignores key order at every depth', () => {
    expect(fingerprint({ a: 1, b: { c: [1, { d: 2, e: 3 }] } })).to.equal(fingerprint({ b: { c: [1, { e: 3, d: 2 }] }, a: 1 }));
  });
  it('tells different values apart', () => {
    expect(fingerprint({ a: 1 })).to.not.equal(fingerprint({ a: '1' }));
    expect(fingerprint({ a: [1, 2] })).to.not.equal(fingerprint({ a: [2, 1] }));
  });
  it('writes canonical JSON', () => expect(canonicalJson({ b: null, a: 'x' })).to.equal('{"a":"x","b":null}'));
});
