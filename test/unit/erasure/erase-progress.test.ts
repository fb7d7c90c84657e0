import { expect } from 'chai';
import { auditReport, nth, progressLine } from '../../../src/erasure/erase-progress.js';
import type { ErasureRecord } from '../../../src/store/clickhouse-erasure.js';
import { erasureId } from '../../../src/store/erasure-scope.js';

const scope = { orgId: '0b5e7e5c-4d2e-4c59-9d1e-0a9a7b1c2d3e', deviceId: '2d7a9a7e-6f4a-4e7b-9f3a-2c1c9d3e4f5a' };
const first: ErasureRecord = {
  erasureId: erasureId(scope),
  scope,
  requestedBy: 'ops:alice',
  reason: 'ticket 1',
  status: 'finished',
  requestedAtMs: Date.UTC(2026, 0, 1),
  startedAtMs: Date.UTC(2026, 0, 1),
  finishedAtMs: Date.UTC(2026, 0, 1, 0, 1),
  eventsRemoved: 12,
  suppressUntilMs: Date.UTC(2026, 0, 31),
};
const second: ErasureRecord = { ...first, erasureId: erasureId(scope, 2), requestedBy: 'ops:bob', status: 'running', startedAtMs: Date.UTC(2026, 2, 1), finishedAtMs: undefined, eventsRemoved: 0, suppressUntilMs: Date.UTC(2026, 2, 31) };

describe('npm run erase progress and report', () => {
  it('says of a scope erased again which erasure this is and names the one before, with when it finished and what it removed', () => {
    const earlier = `the scope's second erasure, after ${first.erasureId} (finished 2026-01-01T00:01:00.000Z, 12 events removed)`;
    expect(progressLine({ kind: 'started', record: second, ordinal: 2, previous: first })).to.include(earlier).and.include('it holds events written since');
    expect(progressLine({ kind: 'resumed', record: second, ordinal: 2, previous: first })).to.include(earlier).and.include('by ops:bob');
    const done = { ...second, status: 'finished' as const, finishedAtMs: Date.UTC(2026, 2, 1, 0, 1) };
    expect(progressLine({ kind: 'already-finished', record: done, ordinal: 2, previous: first })).to.include('nothing to do').and.include(earlier);
    // A first erasure names none.
    const line = progressLine({ kind: 'started', record: first, ordinal: 1, previous: undefined });
    expect(line).to.not.include('erasure, after').and.not.include('written since');
  });

  it('adds to the audit record which erasure of the scope it is and the earlier one\'s id', () => {
    expect(JSON.parse(auditReport(second, { removedNow: 3, alreadyFinished: false, ordinal: 2, previous: first }))).to.deep.include({
      erasure_id: second.erasureId,
      requested_by: 'ops:bob',
      erasure_of_scope: 2,
      previous_erasure_id: first.erasureId,
    });
    expect(JSON.parse(auditReport(first, { removedNow: 12, alreadyFinished: false, ordinal: 1, previous: undefined }))).to.deep.include({ erasure_of_scope: 1, previous_erasure_id: null });
  });

  it('counts erasures as an operator reads them', () => {
    expect([1, 2, 3, 10, 11, 12, 13, 21, 22, 23, 101, 111, 112].map(nth)).to.deep.equal([
      'first', 'second', 'third', 'tenth', '11th', '12th', '13th', '21st', '22nd', '23rd', '101st', '111th', '112th',
    ]);
  });
});
