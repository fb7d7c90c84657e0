import { expect } from 'chai';
import { progressLine } from '../../../src/erasure/erase-progress.js';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { runErasure, type EraseOutcome, type EraseStep } from '../../../src/store/erasure-run.js';
import type { ErasureScope } from '../../../src/store/erasure-scope.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore } from './gateways.js';

const DAY_MS = 86_400_000;
/**
 * The first erasure's suppression, in days: a few seconds. ERASURE_SUPPRESS_DAYS cannot be
 * under one day, so the first run is given its settings directly; the gateway reads the
 * record it writes as it reads any other, and lets the window end as it would a month's.
 */
const SHORT_SUPPRESSION_DAYS = 3000 / DAY_MS;

describeOnEachStore('erasure again: a scope erased, written again after its suppression ends, and erased again', (gateway) => {
  let gw: TestGateway;
  let tenant: Tenant;
  let headers: Record<string, string>;
  let scope: ErasureScope;
  const [erasedDevice, keptDevice] = [uuid(), uuid()];
  const kept: CanonicalEvent[] = [];
  let first: EraseOutcome;

  const eventsOf = (deviceId: string, n: number) => Array.from({ length: n }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, device_id: deviceId }));
  const ingest = (events: readonly CanonicalEvent[]) => gw.runtime.ingestor.ingestMessages(events.map((e) => ({ value: Buffer.from(JSON.stringify(e)) })));
  const pageIds = async (): Promise<string[]> => {
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?limit=200`, { headers });
    expect(res.status).to.equal(200);
    return res.body.data.items.map((e) => e.id);
  };
  const suppressed = () => gw.runtime.erasure.suppressions.covers({ org_id: tenant.orgId, project_id: tenant.projectId }, () => erasedDevice);

  before(async () => {
    gw = await gateway();
    tenant = gw.tenant();
    headers = await tenant.headers();
    scope = { orgId: tenant.orgId, projectId: tenant.projectId, deviceId: erasedDevice };
    const keptBefore = eventsOf(keptDevice, 3);
    kept.push(...keptBefore);
    await gw.seed([...eventsOf(erasedDevice, 6), ...keptBefore]);
    first = await runErasure(
      { scope, requestedBy: 'ops:first', reason: 'ticket 1' },
      { store: gw.runtime.erasure.store, settings: { pollMs: gw.config.erasure.pollMs, suppressDays: SHORT_SUPPRESSION_DAYS } },
    );
    expect(first).to.deep.include({ removedNow: 6, ordinal: 1, previous: undefined });
  });

  it('removes the new events, records its own audit, and the first record stays', async function () {
    this.timeout(120_000);
    // The first erasure's window ends: the gateway's next read of the erasures table lets the device's events in again.
    await waitFor('the first suppression to end on the gateway', async () => (suppressed() ? undefined : true), 30_000);
    const again = eventsOf(erasedDevice, 4);
    const keptAfter = eventsOf(keptDevice, 1);
    kept.push(...keptAfter);
    expect(await ingest([...again, ...keptAfter])).to.deep.equal({ stored: 5, rejected: [] });
    expect(await pageIds()).to.include.members(again.map((e) => e.id));

    const steps: EraseStep[] = [];
    const second = await gw.runtime.erasure.erase({ scope, requestedBy: 'ops:second', reason: 'ticket 2' }, (step) => steps.push(step));

    // Its own record: another id, who and why of this request, the new events counted, a suppression of the configured length from now.
    expect(second).to.deep.include({ removedNow: 4, alreadyFinished: false, ordinal: 2, previous: first.record });
    expect(second.record.erasureId).to.not.equal(first.record.erasureId);
    expect(second.record).to.deep.include({ status: 'finished', eventsRemoved: 4, requestedBy: 'ops:second', reason: 'ticket 2' });
    expect(second.record.startedAtMs).to.be.greaterThan(first.record.finishedAtMs!);
    expect(second.record.suppressUntilMs - second.record.startedAtMs).to.equal(gw.config.erasure.suppressDays * DAY_MS);
    const started = steps.find((s) => s.kind === 'started')!;
    expect(progressLine(started)).to.include(`the scope's second erasure, after ${first.record.erasureId}`).and.include('6 events removed');

    // Gone from the store and the feed; the device's neighbours stay.
    const left = await gw.runtime.erasure.store.rowsLeft(scope);
    expect(Object.values(left).every((rows) => rows === 0), JSON.stringify(left)).to.equal(true);
    expect(await pageIds()).to.have.members(kept.map((e) => e.id));

    // The audit is append-only: both records, the first exactly as its run wrote it.
    const audit = await gw.runtime.erasure.store.ofOrg(tenant.orgId);
    expect(audit).to.have.lengthOf(2);
    expect(audit.find((r) => r.erasureId === first.record.erasureId)).to.deep.equal(first.record);
    expect(audit.find((r) => r.erasureId === second.record.erasureId)).to.deep.equal(second.record);
    expect((await gw.runtime.erasure.store.history(scope)).map((r) => r.erasureId)).to.deep.equal([first.record.erasureId, second.record.erasureId]);

    // The newest governs the suppression: the device's arriving events are dropped again, the ended first window notwithstanding.
    expect(suppressed()).to.equal(true);
    const governing = (await gw.runtime.erasure.store.active(Date.now())).filter((r) => r.scope.orgId === tenant.orgId);
    expect(governing.map((r) => r.erasureId)).to.deep.equal([second.record.erasureId]);
    expect(await ingest(eventsOf(erasedDevice, 2))).to.deep.equal({ stored: 0, rejected: [] });

    // Asked again with nothing written since: the second is reported, naming the first, and nothing new is recorded.
    const third = await gw.runtime.erasure.erase({ scope, requestedBy: 'ops:third', reason: 'ticket 3' });
    expect(third).to.deep.include({ alreadyFinished: true, removedNow: 0, ordinal: 2 });
    expect(third.record).to.deep.equal(second.record);
    expect(third.previous).to.deep.equal(first.record);
    expect(await gw.runtime.erasure.store.ofOrg(tenant.orgId)).to.have.lengthOf(2);
  });
});
