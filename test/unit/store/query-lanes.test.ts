import { expect } from 'chai';
import { createClickHouseProjectChanges } from '../../../src/store/clickhouse-project-changes.js';
import { createClickHouseTail } from '../../../src/store/clickhouse-tail.js';
import type { QueryLane, SqlTransport } from '../../../src/store/sql-transport.js';
import { NIL_UUID } from '../../../src/ids/uuid.js';
import { uuid } from '../../support/factories.js';

/** A transport that answers every query with `rows` and keeps the lane each one asked for. */
function laneRecorder(rows: Record<string, unknown>[]) {
  const lanes: QueryLane[] = [];
  const transport = {
    kind: 'clickhouse-server',
    async query<Row>(_sql: string, _params?: unknown, options: { lane?: QueryLane } = {}) {
      lanes.push(options.lane ?? 'requests');
      return rows as Row[];
    },
  } as unknown as SqlTransport;
  return { transport, lanes };
}

describe('query lanes', () => {
  const scope = { orgId: uuid(), projectId: uuid() };
  const start = { ingestedAt: '2026-01-01 00:00:00.000', id: NIL_UUID };
  // One stored row of the scope, so that a tail read also looks up its earlier copies.
  const row = {
    org_id: scope.orgId,
    project_id: scope.projectId,
    id: uuid(),
    occurred_at: '2026-01-01 00:00:00.000000',
    ingested_at: '2026-01-01 00:00:01.000',
    domain: 'telemetry',
    entity: 'reading',
    action: 'recorded',
    device_id: null,
    fleet_id: null,
    payload: '{}',
    source_service: 'test',
    horizon: '2026-01-01 00:00:02.000',
  };

  it("puts the live tail's shared read, its look-up of copies and the store's clock on the follow lane", async () => {
    const { transport, lanes } = laneRecorder([row]);
    const tail = createClickHouseTail(transport);
    await tail.tailHorizon(0);
    await tail.tailProjects({ scopes: [scope], after: start, before: '2026-01-01 00:00:02.000', limit: 10 });
    expect(lanes).to.deep.equal(['follow', 'follow', 'follow']);
  });

  it("puts the first-page watch's window, its rows and its projects, on the follow lane", async () => {
    const { transport, lanes } = laneRecorder([]);
    const changes = createClickHouseProjectChanges(transport);
    await changes.writtenEvents('2026-01-01 00:00:00.000', '2026-01-01 00:00:01.000', 10);
    await changes.changedProjects('2026-01-01 00:00:00.000', '2026-01-01 00:00:01.000', 10);
    expect(lanes).to.deep.equal(['follow', 'follow']);
  });

  it("leaves a stream's own catch-up, read and look-up of copies, on the requests' lane", async () => {
    const { transport, lanes } = laneRecorder([row]);
    await createClickHouseTail(transport).tailEvents({ ...scope, filters: {}, after: start, before: '2026-01-01 00:00:02.000', limit: 10 });
    expect(lanes).to.deep.equal(['requests', 'requests']);
  });
});
