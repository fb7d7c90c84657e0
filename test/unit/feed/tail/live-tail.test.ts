import { expect } from 'chai';
import { AppError } from '../../../../src/errors/app-error.js';
import { createLiveTail, SLOW_READER_NOTICE, type ClosingNotice, type LiveTail, type LiveTailSettings, type TailMessage, type TailRequest, type TailSink } from '../../../../src/feed/tail/live-tail.js';
import { createStoredBatches } from '../../../../src/feed/stored-batches.js';
import { decodeTailPosition } from '../../../../src/feed/tail/tail-position.js';
import type { CanonicalEvent } from '../../../../src/generated/schema-types.js';
import { createLogger } from '../../../../src/observability/logger.js';
import type { EventStore, TailBatch, TailFilters, TailPosition } from '../../../../src/store/event-store.js';
import { storableEvent } from '../../../../src/store/event-rows.js';
import { canonicalEvent, uuid } from '../../../support/factories.js';
import { waitFor } from '../../../support/wait-for.js';

const SETTINGS: LiveTailSettings = {
  settleMs: 0,
  pollMs: 10,
  heartbeatMs: 60_000,
  maxPerOrg: 1000,
  maxPerCaller: 1000,
  maxPerProcess: 1000,
  maxBufferBytes: 10_000,
};

const textOf = (ms: number) => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
const before = (a: TailPosition, b: TailPosition) => a.ingestedAt < b.ingestedAt || (a.ingestedAt === b.ingestedAt && a.id < b.id);

/**
 * The store's tail reads over rows in memory, with the SQL's semantics: rows after a
 * position and below a horizon, in (ingested_at, id) order, `limit` at most. Its clock
 * moves one millisecond per insert, and its horizon is always past the last insert, so
 * every insert is visible at once. It counts each kind of read.
 */
function memoryTailStore() {
  const rows: { event: CanonicalEvent; position: TailPosition }[] = [];
  let clock = Date.UTC(2026, 0, 1);
  const reads = { horizon: 0, own: 0, shared: 0, sharedScopes: [] as number[] };
  const matches = (f: TailFilters, e: CanonicalEvent) =>
    (f.domain === undefined || f.domain === e.domain) && (f.deviceId === undefined || f.deviceId === e.device_id);

  function window(wanted: (e: CanonicalEvent) => boolean, after: TailPosition, horizon: string, limit: number): TailBatch {
    const found = rows
      .filter((r) => wanted(r.event) && before(after, r.position) && r.position.ingestedAt < horizon)
      .sort((a, b) => (before(a.position, b.position) ? -1 : 1))
      .slice(0, limit);
    const full = found.length >= limit;
    const next = full ? found.at(-1)!.position : horizon > after.ingestedAt ? { ingestedAt: horizon, id: '00000000-0000-0000-0000-000000000000' } : after;
    return { events: found, next, full };
  }

  const store: Pick<EventStore, 'tailHorizon' | 'tailEvents' | 'tailProjects'> = {
    async tailHorizon() {
      reads.horizon += 1;
      return textOf(clock + 1);
    },
    async tailEvents(q) {
      reads.own += 1;
      return window((e) => e.org_id === q.orgId && e.project_id === q.projectId && matches(q.filters, e), q.after, q.before, q.limit);
    },
    async tailProjects(q) {
      reads.shared += 1;
      reads.sharedScopes.push(q.scopes.length);
      const pairs = new Set(q.scopes.map((s) => `${s.orgId}/${s.projectId}`));
      return window((e) => pairs.has(`${e.org_id}/${e.project_id}`), q.after, q.before, q.limit);
    },
  };
  return {
    store: store as EventStore,
    reads,
    insert(events: readonly CanonicalEvent[]) {
      clock += 1;
      for (const event of events) rows.push({ event, position: { ingestedAt: textOf(clock), id: event.id } });
    },
  };
}

/** A client that takes everything at once, or (`reads: false`) one that takes nothing. */
function memorySink(reads = true) {
  const messages: TailMessage[] = [];
  let queued = 0;
  let notice: ClosingNotice | undefined;
  let ended = false;
  const sink: TailSink = {
    send(batch) {
      messages.push(...batch);
      if (!reads) queued += batch.reduce((n, m) => n + m.json.length, 0);
    },
    heartbeat() {},
    get queuedBytes() {
      return queued;
    },
    async drained() {},
    end(last) {
      notice = last;
      ended = true;
    },
  };
  return {
    sink,
    messages,
    ids: () => messages.map((m) => m.event.id),
    get ended() {
      return ended;
    },
    get notice() {
      return notice;
    },
  };
}

describe('live tail: shared reads fanned out in memory', () => {
  const logger = createLogger('silent');
  let tail: LiveTail;

  afterEach(async () => {
    await tail?.closeAll();
  });

  const request = (orgId: string, projectId: string, filters: TailFilters = {}, more: Partial<TailRequest> = {}): TailRequest => ({
    orgId,
    projectId,
    caller: `caller-${orgId}`,
    filters,
    after: undefined,
    ...more,
  });

  it('hands 300 streams over 30 projects every event of their project and filters, once and in order, from one read per poll', async () => {
    const mem = memoryTailStore();
    tail = createLiveTail({ store: mem.store, settings: SETTINGS, logger });
    const projects = Array.from({ length: 30 }, () => ({ orgId: uuid(), projectId: uuid(), device: uuid() }));
    const filterSets: TailFilters[] = [{}, { domain: 'devices' }, { deviceId: undefined }, { domain: 'telemetry' }];
    const streams: { filters: TailFilters; project: (typeof projects)[number]; client: ReturnType<typeof memorySink> }[] = [];
    for (const project of projects) {
      for (let i = 0; i < 10; i++) {
        const filters = i === 9 ? { deviceId: project.device } : filterSets[i % filterSets.length]!;
        const client = memorySink();
        await tail.start(request(project.orgId, project.projectId, filters), client.sink);
        streams.push({ filters, project, client });
      }
    }
    await waitFor('every stream to join the shared read', async () => (tail.stats.live === 300 ? true : undefined));
    const startsHorizon = mem.reads.horizon;
    const startsShared = mem.reads.shared;

    const inserted: CanonicalEvent[] = [];
    for (let round = 0; round < 5; round++) {
      const batch = projects.flatMap((p) => [
        canonicalEvent({ org_id: p.orgId, project_id: p.projectId, domain: 'devices', device_id: round % 2 === 0 ? p.device : uuid() }),
        canonicalEvent({ org_id: p.orgId, project_id: p.projectId, domain: 'telemetry' }),
        // Same project id, another organization: never theirs.
        canonicalEvent({ org_id: uuid(), project_id: p.projectId }),
      ]);
      mem.insert(batch);
      inserted.push(...batch);
    }
    const expected = (s: (typeof streams)[number]) =>
      inserted.filter(
        (e) =>
          e.org_id === s.project.orgId &&
          e.project_id === s.project.projectId &&
          (s.filters.domain === undefined || s.filters.domain === e.domain) &&
          (s.filters.deviceId === undefined || s.filters.deviceId === e.device_id),
      );
    await waitFor('every stream to have its events', async () => (streams.every((s) => s.client.messages.length >= expected(s).length) ? true : undefined));
    // The shared read's next polls would bring anything extra.
    const readsNow = mem.reads.shared;
    await waitFor('three more shared reads', async () => (mem.reads.shared >= readsNow + 3 ? true : undefined));

    for (const s of streams) {
      // Each insert's events come in the store's (ingested_at, id) order: the memory store sorts ids as text.
      const inOrder = expected(s).sort((a, b) => inserted.indexOf(a) - inserted.indexOf(b));
      expect(s.client.ids().sort()).to.deep.equal(inOrder.map((e) => e.id).sort());
      const positions = s.client.messages.map((m) => decodeTailPosition(m.id)!);
      for (let i = 1; i < positions.length; i++) expect(before(positions[i - 1]!, positions[i]!), 'ingestion order').to.equal(true);
    }
    // Reads did not grow with the streams: none of their own, and one shared read (with its horizon) per poll for all 30 projects.
    expect(mem.reads.own).to.equal(0);
    // (A read in flight at either count has asked for its horizon and not yet for its rows.)
    expect(mem.reads.horizon - startsHorizon).to.be.within(mem.reads.shared - startsShared - 1, mem.reads.shared - startsShared + 1);
    expect(mem.reads.sharedScopes.slice(-3)).to.deep.equal([30, 30, 30]);
  });

  it("reads right after this process's own insert passes the horizon, not at the next poll, and only then", async () => {
    const mem = memoryTailStore();
    const stored = createStoredBatches();
    const store = stored.observe({ ...mem.store, insertEvents: async (events) => mem.insert(events.map((e) => e.event)) });
    // A poll a minute apart: only the read that follows the insert can bring its event within the test.
    const settings = { ...SETTINGS, settleMs: 300, pollMs: 60_000 };
    tail = createLiveTail({ store, settings, logger, stored });
    const orgId = uuid();
    const projectId = uuid();
    const client = memorySink();
    await tail.start(request(orgId, projectId), client.sink);
    await waitFor('the stream to join, and the read that follows', async () => (tail.stats.live === 1 && mem.reads.shared === 1 ? true : undefined));
    const readsBefore = mem.reads.shared;
    const event = canonicalEvent({ org_id: orgId, project_id: projectId });
    const insertedAt = performance.now();
    await store.insertEvents([storableEvent(event)]);
    await waitFor('the event', async () => (client.messages.length === 1 ? true : undefined), 10_000, 10);
    // Not before its rows passed the horizon: the settle window still holds.
    expect(performance.now() - insertedAt).to.be.at.least(settings.settleMs);
    expect(client.ids()).to.deep.equal([event.id]);
    expect(mem.reads.shared - readsBefore).to.equal(1);
  });

  it('lets a stream resumed from far behind catch up on its own reads, then join, with nothing missed or sent twice', async () => {
    const mem = memoryTailStore();
    tail = createLiveTail({ store: mem.store, settings: SETTINGS, logger });
    const orgId = uuid();
    const projectId = uuid();
    const live = memorySink();
    await tail.start(request(orgId, projectId), live.sink);
    const history = Array.from({ length: 12 }, (_, i) => Array.from({ length: 100 }, () => canonicalEvent({ org_id: orgId, project_id: projectId, domain: i % 2 === 0 ? 'devices' : 'telemetry' })));
    for (const batch of history) mem.insert(batch);
    const all = history.flat();
    await waitFor('the live stream to have everything', async () => (live.messages.length === all.length ? true : undefined));

    // Resume after the 150th event: 1,050 to go, more than two of a stream's own reads (500 rows each).
    const resumed = memorySink();
    await tail.start(request(orgId, projectId, {}, { after: decodeTailPosition(live.messages[149]!.id) }), resumed.sink);
    const more = Array.from({ length: 20 }, () => canonicalEvent({ org_id: orgId, project_id: projectId }));
    mem.insert(more.slice(0, 10));
    await waitFor('the resumed stream to join', async () => (tail.stats.live === 2 ? true : undefined));
    mem.insert(more.slice(10));
    await waitFor('both streams to have everything', async () => (resumed.messages.length >= all.length - 150 + 20 && live.messages.length >= all.length + 20 ? true : undefined));
    expect(resumed.ids()).to.deep.equal(live.ids().slice(150));
    expect(new Set(resumed.ids()).size).to.equal(resumed.ids().length);
    expect(mem.reads.own, 'its own reads, at least three of 500 rows').to.be.at.least(3);
  });

  it('closes a stream whose client takes nothing once its queue passes the bound, with the slow-reader notice, and goes on feeding the others', async () => {
    const mem = memoryTailStore();
    tail = createLiveTail({ store: mem.store, settings: SETTINGS, logger });
    const orgId = uuid();
    const projectId = uuid();
    const slow = memorySink(false);
    const fast = memorySink();
    const slowHandle = await tail.start(request(orgId, projectId), slow.sink);
    await tail.start(request(orgId, projectId), fast.sink);
    await waitFor('both to join', async () => (tail.stats.live === 2 ? true : undefined));
    const events = Array.from({ length: 200 }, () => canonicalEvent({ org_id: orgId, project_id: projectId }));
    for (let i = 0; i < events.length; i += 20) {
      mem.insert(events.slice(i, i + 20));
      // One shared read per insert, so the slow client's queue grows step by step.
      await waitFor('the fast client to have the insert', async () => (fast.messages.length === i + 20 ? true : undefined), 5000, 5);
    }
    await waitFor('the fast client to have everything', async () => (fast.messages.length === events.length ? true : undefined));
    await slowHandle.done;
    expect(slow.ended).to.equal(true);
    expect(slow.notice).to.deep.equal(SLOW_READER_NOTICE);
    // What it was sent before the close is a prefix of the order, so Last-Event-ID resumes it without a gap.
    expect(slow.ids()).to.deep.equal(fast.ids().slice(0, slow.messages.length));
    expect(slow.messages.length).to.be.below(events.length);
    expect(tail.stats.live).to.equal(1);
  });

  it('caps streams per caller, per organization and per process, each refusal a TOO_MANY_STREAMS with Retry-After, and frees the slot on stop', async () => {
    const mem = memoryTailStore();
    tail = createLiveTail({ store: mem.store, settings: { ...SETTINGS, maxPerCaller: 2, maxPerOrg: 3, maxPerProcess: 5 }, logger });
    const refusal = async (r: TailRequest): Promise<AppError> => {
      try {
        await tail.start(r, memorySink().sink);
      } catch (error) {
        return error as AppError;
      }
      throw new Error('the start was not refused');
    };
    const org = uuid();
    const project = uuid();
    const first = await tail.start(request(org, project, {}, { caller: 'alice' }), memorySink().sink);
    await tail.start(request(uuid(), uuid(), {}, { caller: 'alice' }), memorySink().sink);
    const perCaller = await refusal(request(uuid(), uuid(), {}, { caller: 'alice' }));
    expect(perCaller.code).to.equal('TOO_MANY_STREAMS');
    expect(perCaller.retryAfterSeconds).to.equal(5);
    expect(perCaller.detail).to.match(/caller already has 2/);

    await tail.start(request(org, project, {}, { caller: 'bob' }), memorySink().sink);
    await tail.start(request(org, project, {}, { caller: 'carol' }), memorySink().sink);
    expect((await refusal(request(org, project, {}, { caller: 'dave' }))).detail).to.match(/organization already has 3/);

    await tail.start(request(uuid(), uuid(), {}, { caller: 'erin' }), memorySink().sink);
    expect((await refusal(request(uuid(), uuid(), {}, { caller: 'frank' }))).detail).to.match(/gateway has 5 live tails open/);

    first.stop();
    await first.done;
    await tail.start(request(org, project, {}, { caller: 'alice' }), memorySink().sink);
  });

  it('ends every stream on closeAll with the shutdown notice, and refuses starts after it', async () => {
    const mem = memoryTailStore();
    tail = createLiveTail({ store: mem.store, settings: SETTINGS, logger });
    const clients = [memorySink(), memorySink()];
    const orgId = uuid();
    for (const client of clients) await tail.start(request(orgId, uuid()), client.sink);
    await tail.closeAll();
    for (const client of clients) {
      expect(client.ended).to.equal(true);
      expect(client.notice?.message).to.equal('Shutting down');
    }
    let refused: unknown;
    await tail.start(request(orgId, uuid()), memorySink().sink).catch((error: unknown) => {
      refused = error;
    });
    expect((refused as AppError).code).to.equal('UPSTREAM_UNAVAILABLE');
  });
});
