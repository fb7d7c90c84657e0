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
    expect(statements[1]!.params).to.include({ s0_device: a.deviceId, s1_device: b.deviceId, s2_device: none.deviceId });
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

  it("names each device's parameters apart and reads by the spans table's key", () => {
    const scopes = [scope(), scope()];
    const { sql, params } = deviceSpansSql(scopes);
    for (const name of Object.keys(params)) expect(sql, name).to.include(`{${name}:UUID}`);
    expect(params).to.deep.include({ s1_org: scopes[1]!.orgId, s1_project: scopes[1]!.projectId, s1_device: scopes[1]!.deviceId });
    expect(sql).to.match(/FROM device_spans\s/).and.include('GROUP BY org_id, project_id, device_id');
  });
});
