import { expect } from 'chai';
import { createOrgRateLimiter } from '../../../src/http/org-rate-limiter.js';

/** A clock the test moves by hand, in milliseconds. */
function manualClock(start = 1_000_000) {
  let now = start;
  return {
    now: () => now,
    advance(ms: number) {
      now += ms;
    },
  };
}

function takeAll(limiter: ReturnType<typeof createOrgRateLimiter>, orgId: string, times: number) {
  return Array.from({ length: times }, () => limiter.take(orgId));
}

describe('per-organization rate limiter', () => {
  it('lets a full burst through at once, then refuses', () => {
    const clock = manualClock();
    const limiter = createOrgRateLimiter({ perSecond: 2, burst: 5 }, clock.now);
    expect(takeAll(limiter, 'org-a', 5).every((v) => v.allowed)).to.equal(true);
    expect(limiter.take('org-a')).to.deep.equal({ allowed: false, retryAfterSeconds: 1 });
  });

  it('refills at the configured rate, never above the burst', () => {
    const clock = manualClock();
    const limiter = createOrgRateLimiter({ perSecond: 2, burst: 3 }, clock.now);
    takeAll(limiter, 'org-a', 3);
    clock.advance(499);
    expect(limiter.take('org-a').allowed).to.equal(false);
    clock.advance(1);
    expect(limiter.take('org-a').allowed).to.equal(true);
    clock.advance(60_000);
    expect(takeAll(limiter, 'org-a', 4).map((v) => v.allowed)).to.deep.equal([true, true, true, false]);
  });

  it('keeps organizations apart', () => {
    const clock = manualClock();
    const limiter = createOrgRateLimiter({ perSecond: 1, burst: 1 }, clock.now);
    expect(limiter.take('org-a').allowed).to.equal(true);
    expect(limiter.take('org-a').allowed).to.equal(false);
    expect(limiter.take('org-b').allowed).to.equal(true);
  });

  it('says in whole seconds, at least 1, when a token will be there', () => {
    const clock = manualClock();
    const slow = createOrgRateLimiter({ perSecond: 1, burst: 1 }, clock.now);
    slow.take('org-a');
    clock.advance(100);
    expect(slow.take('org-a')).to.deep.equal({ allowed: false, retryAfterSeconds: 1 });
    const fast = createOrgRateLimiter({ perSecond: 1000, burst: 1 }, clock.now);
    fast.take('org-a');
    expect(fast.take('org-a')).to.deep.equal({ allowed: false, retryAfterSeconds: 1 });
  });

  it('does not spend tokens on refused requests, so a client that keeps retrying still gets through', () => {
    const clock = manualClock();
    const limiter = createOrgRateLimiter({ perSecond: 1, burst: 1 }, clock.now);
    limiter.take('org-a');
    for (let i = 0; i < 9; i++) {
      clock.advance(100);
      expect(limiter.take('org-a').allowed).to.equal(false);
    }
    clock.advance(100);
    expect(limiter.take('org-a').allowed).to.equal(true);
  });

  it('ignores a clock that steps back instead of granting or taking tokens', () => {
    const clock = manualClock();
    const limiter = createOrgRateLimiter({ perSecond: 1, burst: 1 }, clock.now);
    limiter.take('org-a');
    clock.advance(-5000);
    expect(limiter.take('org-a').allowed).to.equal(false);
    clock.advance(1000);
    expect(limiter.take('org-a').allowed).to.equal(true);
  });

  it('forgets buckets that have filled up again once many organizations were seen', () => {
    const clock = manualClock();
    const limiter = createOrgRateLimiter({ perSecond: 10, burst: 10 }, clock.now);
    for (let i = 0; i < 10_000; i++) limiter.take(`org-${i}`);
    expect(limiter.tracked).to.equal(10_000);
    clock.advance(1000);
    limiter.take('newcomer');
    expect(limiter.tracked).to.equal(1);
  });

  it('keeps the buckets that are still draining when it sweeps', () => {
    const clock = manualClock();
    const limiter = createOrgRateLimiter({ perSecond: 1, burst: 1 }, clock.now);
    for (let i = 0; i < 10_000; i++) limiter.take(`org-${i}`);
    limiter.take('newcomer');
    expect(limiter.tracked).to.equal(10_001);
    expect(limiter.take('org-0').allowed).to.equal(false);
  });
});

describe('per-key rate limiter, peeking', () => {
  it('says what take would answer without taking a token', () => {
    let now = 0;
    const limiter = createOrgRateLimiter({ perSecond: 1, burst: 2 }, () => now);
    expect(limiter.peek('a')).to.deep.equal({ allowed: true });
    expect(limiter.tracked).to.equal(0);
    limiter.take('a');
    limiter.take('a');
    expect(limiter.peek('a')).to.deep.equal({ allowed: false, retryAfterSeconds: 1 });
    expect(limiter.peek('a')).to.deep.equal({ allowed: false, retryAfterSeconds: 1 });
    now = 1000;
    expect(limiter.peek('a')).to.deep.equal({ allowed: true });
    expect(limiter.take('a')).to.deep.equal({ allowed: true });
    expect(limiter.peek('a').allowed).to.equal(false);
  });
});
