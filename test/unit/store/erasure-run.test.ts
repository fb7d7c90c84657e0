import { expect } from 'chai';
import type { ErasureRecord, ErasureStore } from '../../../src/store/clickhouse-erasure.js';
import { ErasedScopeWrittenAgainError, ErasureIncompleteError, runErasure, type EraseStep } from '../../../src/store/erasure-run.js';
import { erasureId, scopeCovers, type ErasureScope } from '../../../src/store/erasure-scope.js';

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
    async find(scope) {
      return records.get(erasureId(scope));
    },
    async save(record) {
      records.set(record.erasureId, record);
    },
    async active(nowMs) {
      return [...records.values()].filter((r) => r.suppressUntilMs > nowMs);
    },
    async ofOrg(orgId) {
      return [...records.values()].filter((r) => r.scope.orgId === orgId);
    },
    async countEvents(scope) {
      return rows.filter((r) => scopeCovers(scope, r)).length;
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
    expect(m.deletes).to.deep.equal(['events', 'events_by_device', 'device_spans', 'event_spans', 'command_log']);
    const kinds = steps.map((s) => (s.kind === 'waiting' ? `waiting:${s.why}` : s.kind));
    expect(kinds).to.deep.equal(['started', 'waiting:suppression', 'counted', 'deleted', 'deleted', 'deleted', 'deleted', 'deleted', 'waiting:finish', 'finished']);
    // Deletes began two intervals after the suppression was written; done came two intervals after the finish.
    expect(m.clock.now).to.equal(outcome.record.finishedAtMs! + 2 * SETTINGS.pollMs);
    expect(outcome.record.finishedAtMs).to.equal(started + 2 * SETTINGS.pollMs);
  });

  it('leaves the event spans of a project when only a device goes', async () => {
    const m = memoryStore([]);
    await runErasure({ ...request, scope: { ...scope, deviceId: '2d7a9a7e-6f4a-4e7b-9f3a-2c1c9d3e4f5a' } }, m.options());
    expect(m.deletes).to.deep.equal(['events', 'events_by_device', 'device_spans', 'command_log']);
  });

  it('is a no-op on a finished erasure of the same scope, whoever runs it', async () => {
    const m = memoryStore(rowsOf(ORG, PROJECT, 4));
    const first = await runErasure(request, m.options());
    const again = await runErasure({ ...request, requestedBy: 'ops:bob' }, m.options());
    expect(again).to.deep.equal({ record: first.record, removedNow: 0, alreadyFinished: true });
  });

  it('refuses, deleting nothing, a scope erased before that holds events again, instead of calling it done', async () => {
    const rows = rowsOf(ORG, PROJECT, 4);
    const m = memoryStore(rows);
    await runErasure(request, m.options());
    rows.push(...rowsOf(ORG, PROJECT, 2));
    const deletesBefore = m.deletes.length;
    const refused = await runErasure(request, m.options()).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).to.be.instanceOf(ErasedScopeWrittenAgainError);
    expect((refused as Error).message).to.match(/holds 2 events again/);
    expect(m.deletes.length, 'nothing deleted').to.equal(deletesBefore);
  });

  it('resumes a run cut short, keeping the first count, who asked and when', async () => {
    const rows = rowsOf(ORG, PROJECT, 5);
    const m = memoryStore(rows);
    m.failDelete = 'device_spans';
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
