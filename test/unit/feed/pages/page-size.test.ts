import { expect } from 'chai';
import { clampPageSize } from '../../../../src/feed/pages/page-size.js';

describe('clampPageSize', () => {
  const cases: [number | undefined, number][] = [
    [undefined, 50],
    [-1, 1],
    [0, 1],
    [1, 1],
    [2, 2],
    [199, 199],
    [200, 200],
    [201, 200],
    [1e20, 200],
  ];
  for (const [requested, expected] of cases) {
    it(`gives ${expected} for ${String(requested)}`, () => expect(clampPageSize(requested)).to.equal(expected));
  }
});
