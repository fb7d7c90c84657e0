import { expect } from 'chai';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { createClickHouseServerTransport } from '../../../src/store/clickhouse-server-transport.js';
import type { SqlTransport } from '../../../src/store/sql-transport.js';
import { runErasure } from '../../../src/store/erasure-run.js';
import { canonicalEvent, hs256Token, uuid } from '../../support/factories.js';
import { startTestGateway, type Tenant, type TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { clusterGatewayEnv, clusterInfra } from './cluster-suite.js';

const LOCAL_TABLES = ['events_local', 'events_by_device_local', 'device_spans_v2_local', 'event_spans_local'];

/**
 * An organization erased on two shards without Keeper DDL, by one gateway, while a second
 * gateway on the same database ingests its events, reads its pages and keeps first pages
 * in memory: afterwards no shard holds a row of it, the second gateway's kept pages are
 * gone, and what it ingests for the organization is dropped.
 */
describe('erasure on two ClickHouse shards [cluster]', function () {
  this.timeout(180_000);
  let eraser: TestGateway;
  let keeper: TestGateway;
  let shards: SqlTransport[] = [];
  let tenant: Tenant;
  /** The same organization's caller on each gateway: each signs with a secret of its own. */
  let headers: Record<string, string>;
  let keeperHeaders: Record<string, string>;
  const projects: string[] = [];

  before(async () => {
    const infra = await clusterInfra();
    const env = clusterGatewayEnv(infra, { ERASURE_POLL_MS: '200' });
    eraser = await startTestGateway(env);
    // The same database; first pages kept for a minute, so only the erasure can drop them in time.
    keeper = await startTestGateway({ ...env, FEED_FIRST_PAGE_MAX_AGE_MS: '60000' });
    const config = eraser.config.clickhouse!;
    shards = await Promise.all(infra.clickhouse.shards.map((s) => createClickHouseServerTransport({ ...config, url: s.url, cluster: undefined })));
    tenant = eraser.tenant();
    headers = await tenant.headers();
    keeperHeaders = { authorization: `Bearer ${await hs256Token(keeper.secret, { orgIds: [tenant.orgId] })}`, 'org-id': tenant.orgId };
  });

  after(async () => {
    for (const shard of shards) await shard.close();
    await keeper?.close();
    await eraser?.close();
  });

  const rowsOfOrg = (table: string) =>
    Promise.all(shards.map(async (shard) => Number((await shard.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE org_id = {org:UUID}`, { org: tenant.orgId }))[0]!.n)));
  const firstPage = async (gw: TestGateway, projectId: string) => {
    const res = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${projectId}/events?limit=50`, { headers: gw === keeper ? keeperHeaders : headers });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res;
  };
  const eventsOf = (projectId: string, n: number): CanonicalEvent[] =>
    Array.from({ length: n }, () => canonicalEvent({ org_id: tenant.orgId, project_id: projectId, device_id: uuid() }));

  it('removes the organization from every shard and every derived table, drops the pages another gateway kept, and suppresses it there', async () => {
    // Projects of one organization until both shards hold some: the Distributed tables place each project.
    for (let attempt = 0; attempt < 64; attempt += 1) {
      const projectId = uuid();
      projects.push(projectId);
      await eraser.seed(eventsOf(projectId, 3));
      if ((await rowsOfOrg('events_local')).every((n) => n > 0)) break;
    }
    for (const table of LOCAL_TABLES) for (const n of await rowsOfOrg(table)) expect(n, table).to.be.greaterThan(0);
    // The other gateway keeps each project's first page, and serves it again from memory.
    for (const projectId of projects) {
      expect((await firstPage(keeper, projectId)).body.data.items).to.have.lengthOf(3);
      expect((await firstPage(keeper, projectId)).body.data.items).to.have.lengthOf(3);
    }

    let erasing = true;
    let seededDuring = 0;
    const during = (async () => {
      for (let k = 0; erasing && k < 30; k++) {
        await keeper.seed(eventsOf(projects[k % projects.length]!, 2));
        seededDuring += 2;
        expect((await firstPage(keeper, projects[0]!)).status).to.equal(200);
      }
    })();
    let outcome;
    try {
      outcome = await eraser.runtime.erasure.erase({ scope: { orgId: tenant.orgId }, requestedBy: 'ops:cluster-test', reason: 'left' });
    } finally {
      erasing = false;
      await during;
    }
    expect(seededDuring).to.be.greaterThan(0);
    expect(outcome.record).to.deep.include({ status: 'finished', requestedBy: 'ops:cluster-test' });
    expect(outcome.record.eventsRemoved).to.be.at.least(projects.length * 3);

    for (const table of LOCAL_TABLES) expect(await rowsOfOrg(table), table).to.deep.equal([0, 0]);
    // Done means the other gateway has seen it: no page it kept shows the organization.
    for (const projectId of projects) expect((await firstPage(keeper, projectId)).body.data.items, projectId).to.deep.equal([]);
    expect(keeper.runtime.erasure.suppressions.active).to.be.at.least(1);

    // Arriving afterwards at the other gateway: dropped, not dead-lettered.
    const late = await keeper.runtime.ingestor.ingestMessages(eventsOf(projects[0]!, 4).map((e) => ({ value: Buffer.from(JSON.stringify(e)) })));
    expect(late).to.deep.equal({ stored: 0, rejected: [] });
    expect(await rowsOfOrg('events_local')).to.deep.equal([0, 0]);

    // The audit record, read from either gateway; the same command again removes nothing.
    const [record] = await keeper.runtime.erasure.store.ofOrg(tenant.orgId);
    expect(record).to.deep.equal(outcome.record);
    const again = await eraser.runtime.erasure.erase({ scope: { orgId: tenant.orgId }, requestedBy: 'ops:cluster-test', reason: 'left' });
    expect(again).to.deep.include({ alreadyFinished: true, removedNow: 0 });
  });

  it('erases an organization again once its suppression has ended and it was written again: both shards emptied, a second record beside the first on its shard, the other gateway suppressing it anew', async () => {
    const org = eraser.tenant();
    const orgHeaders = { authorization: `Bearer ${await hs256Token(keeper.secret, { orgIds: [org.orgId] })}`, 'org-id': org.orgId };
    const rowsOf = (table: string) =>
      Promise.all(shards.map(async (shard) => Number((await shard.query<{ n: string }>(`SELECT count() AS n FROM ${table} WHERE org_id = {org:UUID}`, { org: org.orgId }))[0]!.n)));
    const eventsIn = (projectId: string, n: number) => Array.from({ length: n }, () => canonicalEvent({ org_id: org.orgId, project_id: projectId, device_id: uuid() }));
    const orgProjects: string[] = [];
    const fill = async (gw: TestGateway) => {
      // Projects until both shards hold some of the organization's events.
      for (let attempt = 0; attempt < 64 && !(await rowsOf('events_local')).every((n) => n > 0); attempt += 1) {
        const projectId = orgProjects[attempt] ?? uuid();
        if (orgProjects[attempt] === undefined) orgProjects.push(projectId);
        await gw.seed(eventsIn(projectId, 2));
      }
    };
    const coveredOn = (gw: TestGateway) => gw.runtime.erasure.suppressions.covers({ org_id: org.orgId, project_id: orgProjects[0]! }, () => null);
    await fill(eraser);
    const scope = { orgId: org.orgId };
    // A suppression of seconds: ERASURE_SUPPRESS_DAYS is a day at least, so the first run is given its settings.
    const first = await runErasure({ scope, requestedBy: 'ops:first', reason: 'left' }, { store: eraser.runtime.erasure.store, settings: { pollMs: 200, suppressDays: 3000 / 86_400_000 } });
    expect(await rowsOf('events_local')).to.deep.equal([0, 0]);
    await waitFor('the first suppression to end on the other gateway', async () => (coveredOn(keeper) ? undefined : true), 30_000);

    // Back, through the other gateway, on both shards; that gateway keeps a first page of it.
    await fill(keeper);
    expect((await keeper.call<CanonicalEventPageResponse>('GET', `/projects/${orgProjects[0]!}/events?limit=50`, { headers: orgHeaders })).body.data.items.length).to.be.greaterThan(0);
    const written = (await rowsOf('events_local')).reduce((a, b) => a + b, 0);

    const second = await eraser.runtime.erasure.erase({ scope, requestedBy: 'ops:second', reason: 'left again' });
    expect(second).to.deep.include({ ordinal: 2, previous: first.record, removedNow: written, alreadyFinished: false });
    for (const table of LOCAL_TABLES) expect(await rowsOf(table), table).to.deep.equal([0, 0]);
    const kept = await keeper.call<CanonicalEventPageResponse>('GET', `/projects/${orgProjects[0]!}/events?limit=50`, { headers: orgHeaders });
    expect(kept.body.data.items).to.deep.equal([]);
    expect(coveredOn(keeper)).to.equal(true);

    // Both records on the organization's one shard, the first as its run wrote it.
    expect(await rowsOf('erasures_local').then((n) => n.filter((rows) => rows > 0).length)).to.equal(1);
    const audit = await keeper.runtime.erasure.store.ofOrg(org.orgId);
    expect(audit).to.have.deep.members([first.record, second.record]);
  });
});
