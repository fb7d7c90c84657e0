import { expect } from 'chai';
import { batchedDeviceSpans, deviceSpansSql, type DeviceScope } from '../../../src/store/device-span-reads.js';
import { heldTransport } from '../../support/held-transport.js';
import { uuid } from '../../support/factories.js';

const scope = (): DeviceScope => ({ orgId: uuid(), projectId: uuid(), deviceId: uuid() });
/** A span row as the server sends it: ids in lower case, the count as text. */
const spanRow = (s: DeviceScope, events: number) => ({
  org_id: s.orgId.toLowerCase(),
  project_id: s.projectId.toLowerCase(),
  device_id: s.deviceId.toLowerCase(),
  oldest: '2026-01-01 00:00:00.000000',
  newest: '2026-02-01 00:00:00.000000',
  events: String(events),
});
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('device spans read together', () => {
  it('sends a read that finds none out at once, and the reads that come meanwhile as one query, each given its own span', async () => {
    const { transport, statements } = heldTransport();
    const read = batchedDeviceSpans(transport);
    const first = scope();
    const firstSpan = read(first);
    await settle();
    expect(statements).to.have.length(1);
    const [a, b, none] = [scope(), { ...scope(), deviceId: uuid().toUpperCase() }, scope()];
    const waiting = [read(a), read(b), read(none)];
    await settle();
    expect(statements, 'nothing more while the first read is out').to.have.length(1);
    statements[0]!.answer([spanRow(first, 3)]);
    expect(await firstSpan).to.deep.equal({ oldest: '2026-01-01 00:00:00.000000', newest: '2026-02-01 00:00:00.000000', events: 3 });
    await settle();
    expect(statements).to.have.length(2);
    expect(statements[1]!.params).to.deep.include({ devices: [a.deviceId, b.deviceId, none.deviceId] });
    statements[1]!.answer([spanRow(b, 7), spanRow(a, 5)]);
    expect((await Promise.all(waiting)).map((span) => span?.events)).to.deep.equal([5, 7, undefined]);
  });

  it('fails every read of a query the store failed, and sends the next', async () => {
    const { transport, statements } = heldTransport();
    const read = batchedDeviceSpans(transport);
    void read(scope()).catch(() => undefined);
    const failed = [read(scope()), read(scope())].map((p) => p.then(() => 'read', (error: unknown) => (error as Error).message));
    await settle();
    statements[0]!.answer([]);
    await settle();
    statements[1]!.fail(new Error('Code: 202. DB::Exception: Too many simultaneous queries'));
    expect(await Promise.all(failed)).to.deep.equal(['Code: 202. DB::Exception: Too many simultaneous queries', 'Code: 202. DB::Exception: Too many simultaneous queries']);
    const next = read(scope());
    await settle();
    expect(statements).to.have.length(3);
    statements[2]!.answer([]);
    expect(await next).to.equal(undefined);
  });

  it("asks for the devices as one set of the spans table's key, each device's ids at the same place of three arrays", () => {
    const scopes = [scope(), scope(), scope()];
    const { sql, params } = deviceSpansSql(scopes);
    expect(params).to.deep.equal({ orgs: scopes.map((s) => s.orgId), projects: scopes.map((s) => s.projectId), devices: scopes.map((s) => s.deviceId) });
    for (const name of Object.keys(params)) expect(sql, name).to.include(`{${name}:Array(UUID)}`);
    expect(sql).to.include('(org_id, project_id, device_id) IN arrayZip({orgs:Array(UUID)}, {projects:Array(UUID)}, {devices:Array(UUID)})');
    expect(sql).to.match(/FROM device_spans_v2\s/).and.include('GROUP BY org_id, project_id, device_id').and.not.include(' OR ');
  });
});
