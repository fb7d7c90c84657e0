import { expect } from 'chai';
import { progressLine } from '../../../src/erasure/erase-progress.js';
import { governingErasures, tablesErasedFor, type ErasureRecord, type ErasureStore } from '../../../src/store/clickhouse-erasure.js';
import { ErasureIncompleteError, runErasure, type EraseStep } from '../../../src/store/erasure-run.js';
import { erasureId, scopeCovers, scopeKey, type ErasureScope } from '../../../src/store/erasure-scope.js';

const ORG = '0b5e7e5c-4d2e-4c59-9d1e-0a9a7b1c2d3e';
const PROJECT = '1c6f8f6d-5e3f-4d6a-8e2f-1b0b8c2d3e4f';
const SETTINGS = { pollMs: 1000, suppressDays: 30 };

interface Row {
  readonly org_id: string;
  readonly project_id: string;
  readonly id: string;
}

/** The erasures table and the events in memory, with a clock that the run's sleeps move. */
function memoryStore(rows: Row[]) {
  const records = new Map<string, ErasureRecord>();
  const clock = { now: 1_000_000 };
  const deletes: string[] = [];
  let afterDelete: (() => void) | undefined;
  let failDelete: string | undefined;
  const store: ErasureStore = {
    async history(scope) {
      return [...records.values()].filter((r) => scopeKey(r.scope) === scopeKey(scope)).sort((a, b) => a.startedAtMs - b.startedAtMs);
    },
    async save(record) {
      records.set(record.erasureId, record);
    },
    async active(nowMs) {
      return governingErasures([...records.values()], nowMs);
    },
    async ofOrg(orgId) {
      return [...records.values()].filter((r) => r.scope.orgId === orgId);
    },
    async countEvents(scope) {
      return rows.filter((r) => scopeCovers(scope, r)).length;
    },
    // A store no earlier version wrote: it holds none of their tables.
    async tablesFor(scope) {
      return tablesErasedFor(scope)
        .filter((t) => t.earlier !== true)
        .map((t) => t.name);
    },
    async rowsLeft(scope) {
      return { events: rows.filter((r) => scopeCovers(scope, r)).length };
    },
    async deleteFrom(table, scope) {
      if (table === failDelete) throw new Error(`lost the connection deleting from ${table}`);
      deletes.push(table);
      if (table === 'events') {
        for (let i = rows.length - 1; i >= 0; i--) if (scopeCovers(scope, rows[i]!)) rows.splice(i, 1);
        afterDelete?.();
      }
    },
    async close() {},
  };
  const options = (steps: EraseStep[] = []) => ({
    store,
    settings: SETTINGS,
    progress: (step: EraseStep) => steps.push(step),
    now: () => clock.now,
    sleep: async (ms: number) => {
      clock.now += ms;
    },
  });
  return {
    store,
    records,
    deletes,
    clock,
    options,
    set afterDelete(f: () => void) {
      afterDelete = f;
    },
    set failDelete(table: string | undefined) {
      failDelete = table;
    },
  };
}

const rowsOf = (org: string, project: string, n: number): Row[] => Array.from({ length: n }, (_, i) => ({ org_id: org, project_id: project, id: `${project}-${i}` }));
const scope: ErasureScope = { orgId: ORG, projectId: PROJECT };
const request = { scope, requestedBy: 'ops:alice', reason: 'closed' };

describe('an erasure run', () => {
  it('records the erasure, waits two poll intervals before deleting and after finishing, and counts what it removed', async () => {
    const rows = [...rowsOf(ORG, PROJECT, 7), ...rowsOf(ORG, 'other', 3)];
    const m = memoryStore(rows);
    const steps: EraseStep[] = [];
    const started = m.clock.now;
    const outcome = await runErasure(request, m.options(steps));
    expect(outcome).to.deep.include({ removedNow: 7, alreadyFinished: false });
    expect(outcome.record).to.deep.include({ status: 'finished', eventsRemoved: 7, requestedBy: 'ops:alice', reason: 'closed', startedAtMs: started });
    expect(outcome.record.suppressUntilMs - started).to.equal(30 * 86_400_000);
    expect(rows).to.have.lengthOf(3);
    expect(m.deletes).to.deep.equal(['events', 'events_by_device', 'device_spans_v2', 'event_spans', 'command_log']);
    const kinds = steps.map((s) => (s.kind === 'waiting' ? `waiting:${s.why}` : s.kind));
    expect(kinds).to.deep.equal(['started', 'waiting:suppression', 'counted', 'deleted', 'deleted', 'deleted', 'deleted', 'deleted', 'waiting:finish', 'finished']);
    // Deletes began two intervals after the suppression was written; done came two intervals after the finish.
    expect(m.clock.now).to.equal(outcome.record.finishedAtMs! + 2 * SETTINGS.pollMs);
    expect(outcome.record.finishedAtMs).to.equal(started + 2 * SETTINGS.pollMs);
  });

  it('leaves the event spans of a project when only a device goes', async () => {
    const m = memoryStore([]);
    await runErasure({ ...request, scope: { ...scope, deviceId: '2d7a9a7e-6f4a-4e7b-9f3a-2c1c9d3e4f5a' } }, m.options());
    expect(m.deletes).to.deep.equal(['events', 'events_by_device', 'device_spans_v2', 'command_log']);
  });

  it('is a no-op on a finished erasure of the same scope that holds no event, whoever runs it', async () => {
    const m = memoryStore(rowsOf(ORG, PROJECT, 4));
    const first = await runErasure(request, m.options());
    const again = await runErasure({ ...request, requestedBy: 'ops:bob' }, m.options());
    expect(again).to.deep.equal({ record: first.record, removedNow: 0, alreadyFinished: true, ordinal: 1, previous: undefined });
    expect(m.records.size).to.equal(1);
  });

  it('erases a scope written again after its suppression ended as a new erasure with its own record, leaving the first as it was', async () => {
    const rows = [...rowsOf(ORG, PROJECT, 4), ...rowsOf(ORG, 'other', 2)];
    const m = memoryStore(rows);
    const first = await runErasure(request, m.options());
    const firstRecord = structuredClone(first.record);
    // A month and a day on: the first suppression has ended, and the scope is written again.
    m.clock.now = first.record.suppressUntilMs + 86_400_000;
    expect(await m.store.active(m.clock.now), 'nothing suppresses the scope').to.deep.equal([]);
    rows.push(...rowsOf(ORG, PROJECT, 3).map((r) => ({ ...r, id: `${r.id}-again` })));

    const steps: EraseStep[] = [];
    const startedAt = m.clock.now;
    const second = await runErasure({ ...request, requestedBy: 'ops:bob', reason: 'asked again' }, m.options(steps));
    expect(second).to.deep.include({ removedNow: 3, alreadyFinished: false, ordinal: 2, previous: first.record });
    expect(second.record).to.deep.include({ erasureId: erasureId(scope, 2), status: 'finished', eventsRemoved: 3, requestedBy: 'ops:bob', reason: 'asked again', startedAtMs: startedAt });
    expect(second.record.erasureId).to.not.equal(first.record.erasureId);
    expect(second.record.suppressUntilMs).to.equal(startedAt + 30 * 86_400_000);
    expect(rows.map((r) => r.project_id)).to.deep.equal(['other', 'other']);
    // Append-only audit: the first record is the one its own run wrote.
    expect(m.records.get(first.record.erasureId)).to.deep.equal(firstRecord);
    expect(m.records.size).to.equal(2);
    // The new erasure suppresses the scope again, for its own window.
    expect((await m.store.active(m.clock.now)).map((r) => r.erasureId)).to.deep.equal([second.record.erasureId]);

    const started = steps[0]!;
    expect(started).to.deep.include({ kind: 'started', ordinal: 2, previous: first.record });
    expect(progressLine(started)).to.include("the scope's second erasure, after " + first.record.erasureId).and.include('4 events removed');

    // Run again with nothing written since: the second is reported, naming the first.
    const third = await runErasure(request, m.options());
    expect(third).to.deep.include({ record: second.record, removedNow: 0, alreadyFinished: true, ordinal: 2, previous: first.record });
    expect(m.records.size).to.equal(2);
  });

  it('resumes a second erasure cut short rather than starting a third', async () => {
    const rows = rowsOf(ORG, PROJECT, 2);
    const m = memoryStore(rows);
    const first = await runErasure(request, m.options());
    m.clock.now = first.record.suppressUntilMs + 1;
    rows.push(...rowsOf(ORG, PROJECT, 5));
    m.failDelete = 'event_spans';
    const steps: EraseStep[] = [];
    await runErasure({ ...request, requestedBy: 'ops:bob' }, m.options(steps)).then(
      () => expect.fail('the delete failed'),
      () => undefined,
    );
    expect(m.records.get(erasureId(scope, 2))).to.deep.include({ status: 'running', eventsRemoved: 5, requestedBy: 'ops:bob' });
    m.failDelete = undefined;
    const resumedSteps: EraseStep[] = [];
    const resumed = await runErasure({ ...request, requestedBy: 'ops:carol' }, m.options(resumedSteps));
    expect(resumed).to.deep.include({ ordinal: 2, previous: first.record, alreadyFinished: false });
    expect(resumed.record).to.deep.include({ erasureId: erasureId(scope, 2), status: 'finished', eventsRemoved: 5, requestedBy: 'ops:bob' });
    expect(resumedSteps[0]!.kind).to.equal('resumed');
    expect(m.records.size).to.equal(2);
    expect(m.records.get(first.record.erasureId)).to.deep.equal(first.record);
  });

  it('stands for a scope by its newest living erasure, lets an ended one suppress nothing, and keeps an older window that outlasts a shorter newer one', () => {
    const base: ErasureRecord = { erasureId: erasureId(scope), scope, requestedBy: 'ops', reason: '', status: 'finished', requestedAtMs: 0, startedAtMs: 0, finishedAtMs: 10, eventsRemoved: 1, suppressUntilMs: 1000 };
    const second: ErasureRecord = { ...base, erasureId: erasureId(scope, 2), status: 'running', startedAtMs: 100, requestedAtMs: 100, suppressUntilMs: 500 };
    const otherScope: ErasureRecord = { ...base, erasureId: erasureId({ orgId: ORG }), scope: { orgId: ORG } };
    const ids = (records: ErasureRecord[]) => records.map((r) => r.erasureId);
    // Both open: the scope counts once, as its newest (whose status a process tells).
    expect(ids(governingErasures([second, base, otherScope], 200))).to.deep.equal([second.erasureId, otherScope.erasureId]);
    // The second, begun with a shorter window, has ended: the first's window, still open, keeps the scope suppressed.
    expect(ids(governingErasures([base, second], 600))).to.deep.equal([base.erasureId]);
    // Every window ended: nothing suppresses, the newest no more than the oldest.
    expect(governingErasures([base, second, otherScope], 1000)).to.deep.equal([]);
  });

  it('resumes a run cut short, keeping the first count, who asked and when', async () => {
    const rows = rowsOf(ORG, PROJECT, 5);
    const m = memoryStore(rows);
    m.failDelete = 'device_spans_v2';
    let failed: unknown;
    await runErasure(request, m.options()).catch((error: unknown) => (failed = error));
    expect(failed).to.be.an('error');
    expect([...m.records.values()][0]).to.deep.include({ status: 'running', eventsRemoved: 5 });
    m.failDelete = undefined;
    const resumed = await runErasure({ ...request, requestedBy: 'ops:bob' }, m.options());
    expect(resumed.record).to.deep.include({ status: 'finished', eventsRemoved: 5, requestedBy: 'ops:alice' });
    expect(resumed.removedNow).to.equal(0);
  });

  it('deletes again what a late batch wrote after the count, and gives up, still running, when writes go on', async () => {
    const rows = rowsOf(ORG, PROJECT, 2);
    const m = memoryStore(rows);
    let late = 1;
    m.afterDelete = () => {
      if (late-- > 0) rows.push({ org_id: ORG, project_id: PROJECT, id: 'late' });
    };
    const outcome = await runErasure(request, m.options());
    expect(outcome.record.eventsRemoved).to.equal(3);

    const busy = rowsOf(ORG, 'p2', 1);
    const n = memoryStore(busy);
    n.afterDelete = () => busy.push({ org_id: ORG, project_id: 'p2', id: String(busy.length) });
    let error: unknown;
    await runErasure({ ...request, scope: { orgId: ORG, projectId: 'p2' } }, n.options()).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(ErasureIncompleteError);
    expect([...n.records.values()][0]!.status).to.equal('running');
  });
});
