import { expect } from 'chai';
import fc from 'fast-check';
import { feedWindows, msStoreText, storeTextMs, WINDOW_PLAN, windowWalk, type FeedWindow, type WindowWalk } from '../../../src/store/feed-windows.js';
import { NIL_UUID } from '../../../src/ids/uuid.js';

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
const at = (ms: number) => msStoreText(ms);

/** Where a timestamp falls: the index of the one window holding it, or -1 when none does. */
function windowOf(windows: readonly FeedWindow[], text: string): number {
  const holding = windows.flatMap((w, i) => ((w.from === undefined || text >= w.from) && (w.to === undefined || text < w.to) ? [i] : []));
  expect(holding.length, `windows holding ${text}`).to.be.at.most(1);
  return holding[0] ?? -1;
}

describe('feed windows', () => {
  it('starts below now with an open top, and widens eight times each window up to 31 days', () => {
    const windows = feedWindows({ after: undefined, filters: {} }, NOW);
    expect(windows[0]).to.deep.equal({ from: at(NOW - HOUR) });
    expect(windows[1]).to.deep.equal({ from: at(NOW - 9 * HOUR), to: at(NOW - HOUR) });
    expect(windows[2]).to.deep.equal({ from: at(NOW - 73 * HOUR), to: at(NOW - 9 * HOUR) });
    const widths = windows.slice(1).map((w) => storeTextMs(w.to!) - storeTextMs(w.from!));
    expect(widths.slice(0, 4)).to.deep.equal([8 * HOUR, 64 * HOUR, 512 * HOUR, 31 * 24 * HOUR]);
    expect(Math.max(...widths)).to.equal(WINDOW_PLAN.widestMs);
    expect(windows).to.have.length(WINDOW_PLAN.probes);
  });

  it('starts below a cursor or an until earlier than now, whichever is earliest', () => {
    const cursorMs = NOW - 1000 * HOUR;
    const after = { occurredAt: '2026-01-01 00:00:00.123456', id: NIL_UUID };
    expect(feedWindows({ after, filters: {} }, NOW)[0]).to.deep.equal({ from: at(storeTextMs(after.occurredAt) - HOUR) });
    expect(feedWindows({ after: undefined, filters: { until: at(cursorMs) } }, NOW)[0]).to.deep.equal({ from: at(cursorMs - HOUR) });
    expect(feedWindows({ after, filters: { until: at(NOW + HOUR) } }, NOW)[0]!.from).to.equal(at(storeTextMs(after.occurredAt) - HOUR));
  });

  it('ends with a window down to since once the widening reaches it', () => {
    const since = at(NOW - 5 * HOUR);
    expect(feedWindows({ after: undefined, filters: { since } }, NOW)).to.deep.equal([{ from: at(NOW - HOUR) }, { to: at(NOW - HOUR) }]);
    expect(feedWindows({ after: undefined, filters: { since: at(NOW + HOUR) } }, NOW)).to.deep.equal([{}]);
  });

  it('reaches no lower bound below 1900, where the store holds nothing', () => {
    const windows = feedWindows({ after: undefined, filters: {} }, Date.UTC(1900, 0, 3), WINDOW_PLAN);
    expect(windows.at(-1)).to.not.have.property('from');
    expect(windows.length).to.be.below(WINDOW_PLAN.probes);
  });

  it('puts every instant of the range in exactly one window, the later ones first, and reads at most the plan probes', () => {
    const plan = fc.record({
      firstMs: fc.integer({ min: 1, max: 10 * HOUR }),
      growth: fc.integer({ min: 1, max: 10 }),
      widestMs: fc.integer({ min: 10 * HOUR, max: 100 * 24 * HOUR }),
      probes: fc.integer({ min: 1, max: 30 }),
    });
    const instant = fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2030, 0, 1) });
    fc.assert(
      fc.property(plan, instant, fc.option(instant, { nil: undefined }), fc.array(instant, { maxLength: 20 }), (p, now, since, points) => {
        const filters = since === undefined ? {} : { since: at(since) };
        const windows = feedWindows({ after: undefined, filters }, now, p);
        expect(windows.length).to.be.within(1, p.probes);
        for (let i = 1; i < windows.length; i += 1) expect(windows[i]!.to).to.equal(windows[i - 1]!.from);
        const lowest = windows.at(-1)!.from;
        for (const point of points) {
          const text = at(point);
          if (since !== undefined && point < since) continue;
          const holder = windowOf(windows, text);
          // Held by one window, or below every window, when the probes ran out first.
          if (holder === -1) expect(lowest !== undefined && text < lowest, `${text} below ${lowest}`).to.equal(true);
        }
      }),
    );
  });

  describe('walk', () => {
    const drain = (walk: WindowWalk) => {
      const out: FeedWindow[] = [];
      for (let w = walk.next(); w !== undefined; w = walk.next()) out.push(w);
      return out;
    };

    it('without skips hands out exactly the plan\'s windows', () => {
      for (const filters of [{}, { since: at(NOW - 5 * HOUR) }, { since: at(NOW - 400 * 24 * HOUR) }]) {
        expect(drain(windowWalk({ after: undefined, filters }, NOW))).to.deep.equal(feedWindows({ after: undefined, filters }, NOW));
      }
    });

    it('skips only once the widening reaches its widest, then reaches from the empty window\'s edge down past the newest event, never below the plan\'s reach, within the probes', () => {
      const walk = windowWalk({ after: undefined, filters: {} }, NOW);
      expect(walk.reach).to.equal(feedWindows({ after: undefined, filters: {} }, NOW).at(-1)!.from);
      const narrow = [walk.next(), walk.next(), walk.next()];
      expect(walk.canSkip, 'after 1 h, 8 h and 64 h').to.equal(false);
      const fourth = walk.next()!;
      expect(walk.canSkip, 'after 21 days: the next window is 31 days').to.equal(true);
      const newest = NOW - 200 * 24 * HOUR + 0.5;
      walk.skipTo(newest);
      const next = walk.next()!;
      expect(next.to, 'no gap after the empty window').to.equal(fourth.from);
      // As wide as the next window would have been (31 days), below the event's next millisecond.
      expect(next.from).to.equal(at(Math.floor(newest) + 1 - 31 * 24 * HOUR));
      const rest = drain(walk);
      expect(rest.at(-1)!.from).to.equal(walk.reach);
      expect(narrow.length + 1 + 1 + 1 + rest.length, 'windows and the skip').to.be.at.most(WINDOW_PLAN.probes);
      for (let i = 1; i < rest.length; i += 1) expect(rest[i]!.to).to.equal(rest[i - 1]!.from);
    });

    it('ends at the reach when a skip lands within one window of it', () => {
      const walk = windowWalk({ after: undefined, filters: {} }, NOW);
      for (let i = 0; i < 3; i += 1) walk.next();
      const fourth = walk.next()!;
      walk.skipTo(storeTextMs(walk.reach!) + 1000);
      expect(walk.next()).to.deep.equal({ from: walk.reach, to: fourth.from });
      expect(walk.next()).to.equal(undefined);
      expect(walk.canSkip).to.equal(false);
    });

    it('paces the next window for what the page still needs at the rate found so far, twice over, even past the widest', () => {
      const walk = windowWalk({ after: undefined, filters: {} }, NOW);
      walk.next();
      const second = walk.next()!;
      // 3 events in the first 9 hours, 48 still needed: 9 h / 3 × 48 × 2 = 288 h.
      walk.paceFor(3, 48);
      const third = walk.next()!;
      expect(third).to.deep.equal({ from: at(NOW - 297 * HOUR), to: second.from });
      // 4 events in 297 hours, 47 needed: 6,979.5 hours, past the widest (31 days).
      walk.paceFor(4, 47);
      expect(walk.next()).to.deep.equal({ from: at(NOW - 297 * HOUR - 6979.5 * HOUR), to: third.from });
      // 5 in 7,276.5 hours, 46 needed: further than the reach, so down to it, and the walk ends.
      walk.paceFor(5, 46);
      expect(walk.next()).to.deep.equal({ from: walk.reach, to: at(NOW - 7276.5 * HOUR) });
      expect(walk.next()).to.equal(undefined);
    });

    it('paces after a skip by the time its windows read, not the empty stretch it skipped', () => {
      const walk = windowWalk({ after: undefined, filters: {} }, NOW);
      for (let i = 0; i < 4; i += 1) walk.next();
      // Empty down to 585 hours; the newest event below lies 100 days back.
      walk.skipTo(NOW - 2400 * HOUR);
      const fifth = walk.next()!;
      expect(fifth.from).to.equal(at(NOW - 2400 * HOUR + 1 - 31 * 24 * HOUR));
      // 20 events in the 585 + 744 hours read, 31 needed. Counting the 1,815 skipped hours
      // too would have paced it past the reach.
      walk.paceFor(20, 31);
      expect(walk.next()).to.deep.equal({ from: at(NOW - 2400 * HOUR + 1 - 744 * HOUR - Math.ceil(((1329 * HOUR) / 20) * 31 * 2)), to: fifth.from });
    });

    it('goes on after a first read from its edge to the microsecond, the read counted as a probe, paced by the time that window read', () => {
      // The first read took the 30 hours below a newest event 100 days back: 10 events found, 41 needed.
      const newest = NOW - 2400 * HOUR;
      const edgeMs = newest - 30 * HOUR;
      const edge = `${at(edgeMs).slice(0, -3)}456`;
      const walk = windowWalk({ after: undefined, filters: {} }, NOW, WINDOW_PLAN, { edge, topMs: newest });
      walk.paceFor(10, 41);
      // 30 h / 10 × 41 × 2 = 246 hours, not paced by the 2,400 idle hours above the newest event.
      expect(walk.next()).to.deep.equal({ from: at(edgeMs - 246 * HOUR), to: edge });
      let windows = 2;
      while (walk.next() !== undefined) windows += 1;
      expect(windows, 'the first read and the windows after it').to.be.at.most(WINDOW_PLAN.probes);
    });

    it('never paces a window narrower than the plan\'s next one', () => {
      const walk = windowWalk({ after: undefined, filters: {} }, NOW);
      walk.next();
      // 50 events in the first hour and 1 needed: the plan's 8 hours stand.
      walk.paceFor(50, 1);
      expect(walk.next()).to.deep.equal({ from: at(NOW - 9 * HOUR), to: at(NOW - HOUR) });
      walk.paceFor(0, 10);
      expect(walk.next()).to.deep.equal({ from: at(NOW - 73 * HOUR), to: at(NOW - 9 * HOUR) });
    });

    it('keeps every instant in one window, newest first, within the probes, whatever the pacing and skips', () => {
      const step = fc.oneof(
        fc.record({ kind: fc.constant('pace' as const), found: fc.integer({ min: 0, max: 60 }), needed: fc.integer({ min: 0, max: 60 }) }),
        fc.record({ kind: fc.constant('skip' as const), back: fc.integer({ min: 0, max: 2000 * HOUR }) }),
      );
      fc.assert(
        fc.property(fc.array(step, { maxLength: 30 }), fc.array(fc.integer({ min: NOW - 600 * 24 * HOUR, max: NOW }), { maxLength: 20 }), (steps, points) => {
          const walk = windowWalk({ after: undefined, filters: {} }, NOW);
          const windows: FeedWindow[] = [];
          let skips = 0;
          for (const s of steps) {
            const w = walk.next();
            if (w === undefined) break;
            windows.push(w);
            if (s.kind === 'pace') walk.paceFor(s.found, s.needed);
            else if (walk.canSkip) {
              walk.skipTo(storeTextMs(w.from!) - s.back);
              skips += 1;
            }
          }
          windows.push(...drain(walk));
          expect(windows.length + skips).to.be.at.most(WINDOW_PLAN.probes);
          for (const w of windows) if (w.from !== undefined) expect(w.from >= walk.reach!, `${w.from} not below the reach`).to.equal(true);
          for (let i = 1; i < windows.length; i += 1) expect(windows[i]!.to).to.equal(windows[i - 1]!.from);
          const lowest = windows.at(-1)!.from;
          for (const point of points) {
            if (windowOf(windows, at(point)) === -1) expect(lowest !== undefined && at(point) < lowest).to.equal(true);
          }
        }),
      );
    });

    it('leaves no skip without a window after it', () => {
      const walk = windowWalk({ after: undefined, filters: {} }, NOW, { ...WINDOW_PLAN, firstMs: WINDOW_PLAN.widestMs, probes: 3 });
      walk.next();
      expect(walk.canSkip).to.equal(true);
      walk.skipTo(NOW - 1000 * HOUR);
      walk.next();
      expect(walk.canSkip).to.equal(false);
      expect(walk.next()).to.equal(undefined);
    });
  });
});
