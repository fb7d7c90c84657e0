import { expect } from 'chai';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import type { EraseOutcome } from '../../../src/store/erasure-run.js';
import { scopeCovers, type ErasureScope } from '../../../src/store/erasure-scope.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { parseMetrics, samplesOf } from '../../support/metrics-text.js';
import { openEventStream, type SseStream } from '../../support/sse-reader.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { describeOnEachStore } from './gateways.js';

const DAY_MS = 86_400_000;

/** Events of a project, half of them of one device, spread over the last 90 days so pages walk several windows. */
function history(orgId: string, projectId: string, devices: readonly string[], count: number): CanonicalEvent[] {
  const now = Date.now();
  return Array.from({ length: count }, (_, i) =>
    canonicalEvent({ org_id: orgId, project_id: projectId, device_id: devices[i % devices.length]!, occurred_at: new Date(now - ((i * 7919) % 90) * DAY_MS - i * 1000).toISOString() }),
  );
}

describeOnEachStore('erasure: an organization, a project or a device erased while events arrive and pages are read', (gateway) => {
  for (const kind of ['device', 'project', 'org'] as const) {
    describe(`of a ${kind}`, function () {
      this.timeout(120_000);
      let gw: TestGateway;
      let tenant: Tenant;
      let bystander: Tenant;
      let headers: Record<string, string>;
      let bystanderHeaders: Record<string, string>;
      const otherProject = uuid();
      const [erasedDevice, keptDevice] = [uuid(), uuid()];
      let scope: ErasureScope;
      /** Every event given to ingest, and those that the scope covers. */
      const seeded: CanonicalEvent[] = [];
      let covered: (e: CanonicalEvent) => boolean;
      let outcome: EraseOutcome;
      let suppressedDuring: number;
      /** Taken before the erasure: a live tail open across it, a position to resume from, a first page's ETag, cursors into the history. */
      let openTail: SseStream;
      /** How many messages the open tail had when the erasure was done. */
      let doneMark: number;
      let resumeAt: string;
      let etag: string;
      let cursors: { feed: string; device: string };

      const page = (projectId: string, query: string, extra: Record<string, string> = {}) =>
        gw.call<CanonicalEventPageResponse>('GET', `/projects/${projectId}/events${query}`, { headers: { ...headers, ...extra } });
      const tailOf = async (projectId: string, resume?: string): Promise<SseStream> => {
        const res = await openEventStream(`${gw.baseUrl}/projects/${projectId}/events/stream`, { ...headers, ...(resume === undefined ? {} : { 'last-event-id': resume }) });
        expect(res.status).to.equal(200);
        return res.stream!;
      };
      const tailed = (stream: SseStream, from = 0): CanonicalEvent[] => stream.messages.slice(from).map((m) => JSON.parse(m.data) as CanonicalEvent);
      const suppressedTotal = async (): Promise<number> => {
        const scraped = parseMetrics((await request('GET', new URL('/metrics', gw.runtime.url).toString())).text);
        return samplesOf(scraped, 'erasure_suppressed_events_total')[0]?.value ?? 0;
      };
      const seed = async (events: CanonicalEvent[]) => {
        seeded.push(...events);
        await gw.seed(events);
      };

      /** Every event id of a traversal by cursor from `from`, `limit` a page. */
      async function traverse(projectId: string, query: string, limit: number, from: string | null = null, extra: Record<string, string> = {}): Promise<string[]> {
        const ids: string[] = [];
        let cursor = from;
        do {
          const res = await page(projectId, `?limit=${limit}${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, extra);
          expect(res.status).to.equal(200);
          ids.push(...res.body.data.items.map((e) => e.id));
          cursor = res.body.meta.next_cursor;
        } while (cursor !== null);
        return ids;
      }

      before(async () => {
        gw = await gateway();
        tenant = gw.tenant();
        bystander = gw.tenant();
        headers = await tenant.headers();
        bystanderHeaders = await bystander.headers();
        const { orgId, projectId } = tenant;
        scope = kind === 'device' ? { orgId, projectId, deviceId: erasedDevice } : kind === 'project' ? { orgId, projectId } : { orgId };
        covered = (e) => scopeCovers(scope, e);
        const tail = await tailOf(projectId);
        await seed([
          ...history(orgId, projectId, [erasedDevice, keptDevice], 60),
          // The erased device in another project: outside a device's erasure scoped to the first.
          ...history(orgId, otherProject, [erasedDevice, keptDevice], 30),
          ...history(bystander.orgId, bystander.projectId, [erasedDevice], 30),
        ]);
        await tail.until('the project\'s events', (s) => s.messages.length >= 60);
        resumeAt = tail.messages[0]!.id!;
        openTail = tail;
        const first = await page(projectId, '?limit=50');
        etag = first.headers.get('etag')!;
        expect(etag).to.be.a('string');
        cursors = { feed: (await page(projectId, '?limit=5')).body.meta.next_cursor!, device: (await page(projectId, `?limit=5&device_id=${erasedDevice}`)).body.meta.next_cursor! };

        // The erasure runs while events of the scope and beside it keep arriving and pages keep being read.
        const suppressedBefore = await suppressedTotal();
        let erasing = true;
        const ingest = (async () => {
          for (let batches = 0; erasing && batches < 40; batches++) await seed([...history(orgId, projectId, [erasedDevice, keptDevice], 4), ...history(orgId, otherProject, [erasedDevice], 2)]);
        })();
        const reads = (async () => {
          while (erasing) expect((await page(projectId, '?limit=20')).status).to.equal(200);
        })();
        try {
          outcome = await gw.runtime.erasure.erase({ scope, requestedBy: 'ops:erasure-test', reason: `tenant asked (${kind})` });
          doneMark = openTail.messages.length;
        } finally {
          erasing = false;
          await Promise.all([ingest, reads]);
        }
        suppressedDuring = (await suppressedTotal()) - suppressedBefore;
      });

      after(async () => {
        await openTail?.close();
      });

      it('removes every event of the scope, counts them in the audit record with who, why and when, and leaves a row in no derived table', async () => {
        const inScope = new Set(seeded.filter(covered).map((e) => e.id)).size;
        expect(outcome.alreadyFinished).to.equal(false);
        // What ingest dropped never reached the store; every other event of the scope was stored, then removed.
        expect(outcome.record.eventsRemoved).to.equal(inScope - suppressedDuring);
        expect(outcome.removedNow).to.equal(outcome.record.eventsRemoved);
        const [record] = (await gw.runtime.erasure.store.ofOrg(tenant.orgId)).filter((r) => r.erasureId === outcome.record.erasureId);
        expect(record).to.deep.include({ requestedBy: 'ops:erasure-test', reason: `tenant asked (${kind})`, status: 'finished', eventsRemoved: outcome.record.eventsRemoved });
        expect(record!.scope).to.deep.equal(scope);
        expect(record!.finishedAtMs).to.be.at.least(record!.startedAtMs);
        expect(record!.suppressUntilMs - record!.startedAtMs).to.equal(30 * DAY_MS);
        const left = await gw.runtime.erasure.store.rowsLeft(scope);
        expect(Object.values(left).every((rows) => rows === 0), JSON.stringify(left)).to.equal(true);
      });

      it('shows no erased event on any page, by cursor, by device or after an ETag, and every other event still', async () => {
        const stored = seeded.filter((e) => !covered(e));
        for (const [projectId, who] of [
          [tenant.projectId, headers],
          [otherProject, headers],
          [bystander.projectId, bystanderHeaders],
        ] as const) {
          const expected = stored.filter((e) => e.project_id === projectId && e.org_id === (who === headers ? tenant.orgId : bystander.orgId)).map((e) => e.id);
          for (const limit of [7, 50]) {
            expect(await traverse(projectId, '', limit, null, who), `${projectId} limit ${limit}`).to.have.members(expected);
            const ofDevice = stored.filter((e) => e.project_id === projectId && e.device_id === erasedDevice).map((e) => e.id);
            expect(await traverse(projectId, `&device_id=${erasedDevice}`, limit, null, who), `device in ${projectId}`).to.have.members(ofDevice);
          }
        }
        const ids = new Set(seeded.filter(covered).map((e) => e.id));
        for (const id of [...(await traverse(tenant.projectId, '', 10, cursors.feed)), ...(await traverse(tenant.projectId, `&device_id=${erasedDevice}`, 10, cursors.device))]) {
          expect(ids.has(id), `cursor from before the erasure led to erased ${id}`).to.equal(false);
        }
        // The ETag of the first page before: the page changed, so it is sent again, without the erased events.
        const again = await page(tenant.projectId, '?limit=50', { 'if-none-match': etag });
        expect(again.status).to.equal(200);
        expect(again.body.data.items.filter((e) => ids.has(e.id))).to.deep.equal([]);
      });

      it('streams no erased event: not on a tail open across the erasure once it is done, nor on a resume from before it', async () => {
        const resumed = await tailOf(tenant.projectId, resumeAt);
        const heartbeats = (stream: SseStream) => stream.comments.filter((c) => c.startsWith('heartbeat')).length;
        try {
          // Two heartbeats: the resume has read the project's whole history (one read of fewer rows than a batch) and had nothing more to send.
          await resumed.until('two heartbeats after the history', (s) => heartbeats(s) >= 2);
          const erasedAgain = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, device_id: erasedDevice });
          const sentinel = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, device_id: keptDevice });
          // A device's erasure leaves the project's other events: one of them proves each stream read past the erased one.
          await seed(kind === 'device' ? [erasedAgain, sentinel] : [erasedAgain]);
          if (kind === 'device') {
            for (const stream of [openTail, resumed]) await stream.until('the event seeded after the erasure', (s) => tailed(s).some((e) => e.id === sentinel.id));
          } else {
            const [open, res] = [heartbeats(openTail), heartbeats(resumed)];
            for (const [stream, from] of [[openTail, open], [resumed, res]] as const) await stream.until('two heartbeats after the erased event', (s) => heartbeats(s) >= from + 2);
          }
          const erasedIds = new Set(seeded.filter(covered).map((e) => e.id));
          expect(tailed(resumed).filter((e) => erasedIds.has(e.id)).map((e) => e.id), 'resumed from before the erasure').to.deep.equal([]);
          expect(tailed(openTail, doneMark).filter((e) => erasedIds.has(e.id)).map((e) => e.id), 'open across the erasure, after it was done').to.deep.equal([]);
        } finally {
          await resumed.close();
        }
      });

      it('drops the scope\'s events that arrive afterwards, counted and not dead-lettered, and a second run removes nothing', async () => {
        const before = await suppressedTotal();
        const late = [...history(tenant.orgId, tenant.projectId, [erasedDevice], 5)];
        const result = await gw.runtime.ingestor.ingestMessages(late.map((e) => ({ value: Buffer.from(JSON.stringify(e)) })));
        expect(result.rejected).to.deep.equal([]);
        expect((await suppressedTotal()) - before).to.equal(5);
        expect(await gw.runtime.erasure.store.countEvents(scope)).to.equal(0);

        const rerun = await gw.runtime.erasure.erase({ scope, requestedBy: 'ops:someone-else', reason: 'again' });
        expect(rerun).to.deep.include({ alreadyFinished: true, removedNow: 0 });
        expect(rerun.record).to.deep.equal(outcome.record);
      });
    });
  }
});
