import { expect } from 'chai';
import type { Config } from '../../../../src/config/config.js';
import { firstPagesOf } from '../../../../src/feed/first-page-cache/first-page-cache.js';

/** Counts who follows the process's writes. */
function writes() {
  let followers = 0;
  return {
    stored: {
      onStored: () => {
        followers += 1;
        return () => undefined;
      },
    },
    followers: () => followers,
  };
}

describe('first pages a process keeps', () => {
  const cases: { role: Config['role']; maxAgeMs: number; keeps: boolean }[] = [
    { role: 'gateway', maxAgeMs: 1000, keeps: true },
    { role: 'all', maxAgeMs: 1000, keeps: true },
    { role: 'gateway', maxAgeMs: 0, keeps: false },
    { role: 'all', maxAgeMs: 0, keeps: false },
    { role: 'consumer', maxAgeMs: 1000, keeps: false },
  ];
  for (const { role, maxAgeMs, keeps } of cases) {
    it(`ROLE=${role}, FEED_FIRST_PAGE_MAX_AGE_MS=${maxAgeMs}: ${keeps ? 'keeps pages and follows its writes' : 'keeps none and does not follow its writes'}`, () => {
      const { stored, followers } = writes();
      const cache = firstPagesOf({ role, feedFirstPageMaxAgeMs: maxAgeMs }, stored);
      expect(cache !== undefined, 'a cache').to.equal(keeps);
      expect(followers(), 'listeners of its writes').to.equal(keeps ? 1 : 0);
    });
  }
});
