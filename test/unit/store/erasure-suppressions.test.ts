import { expect } from 'chai';
import type { ErasureRecord } from '../../../src/store/clickhouse-erasure.js';
import { erasureId, normalizedScope, type ErasureScope } from '../../../src/store/erasure-scope.js';
import { createErasureSuppressions } from '../../../src/store/erasure-suppressions.js';
import { createLogger } from '../../../src/observability/logger.js';

const ORG = '0b5e7e5c-4d2e-4c59-9d1e-0a9a7b1c2d3e';
const PROJECT = '1c6f8f6d-5e3f-4d6a-8e2f-1b0b8c2d3e4f';
const DEVICE = '2d7a9a7e-6f4a-4e7b-9f3a-2c1c9d3e4f5a';

const record = (scope: ErasureScope, status: 'running' | 'finished', suppressUntilMs = 10_000): ErasureRecord => ({
  erasureId: erasureId(scope),
  scope: normalizedScope(scope),
  requestedBy: 'ops',
  reason: '',
  status,
  requestedAtMs: 0,
  startedAtMs: 0,
  finishedAtMs: status === 'finished' ? 1 : undefined,
  eventsRemoved: 0,
  suppressUntilMs,
});

describe('erasure suppressions', () => {
  const logger = createLogger('silent');

  it('covers what a living erasure covers, asks for the device only for a device erasure of the organization, and tells each change once', async () => {
    let records: ErasureRecord[] = [];
    let changes = 0;
    let now = 0;
    const suppressions = await createErasureSuppressions({
      store: { active: async (at) => records.filter((r) => r.suppressUntilMs > at) },
      settings: { pollMs: 1000, suppressDays: 30 },
      logger,
      changed: () => changes++,
      now: () => now,
      polling: false,
    });
    let asked = 0;
    const device = (id: string | null) => () => {
      asked++;
      return id;
    };
    const event = { org_id: ORG.toUpperCase(), project_id: PROJECT };
    expect(suppressions.covers(event, device(DEVICE))).to.equal(false);
    expect(changes).to.equal(0);

    records = [record({ orgId: ORG, projectId: PROJECT, deviceId: DEVICE }, 'running')];
    await suppressions.refresh();
    expect(changes).to.equal(1);
    expect(suppressions.covers(event, device(DEVICE.toUpperCase()))).to.equal(true);
    expect(suppressions.covers(event, device(null))).to.equal(false);
    expect(suppressions.covers({ org_id: PROJECT, project_id: PROJECT }, device(DEVICE))).to.equal(false);
    expect(asked).to.equal(2);

    await suppressions.refresh();
    expect(changes, 'nothing new').to.equal(1);
    records = [record({ orgId: ORG, projectId: PROJECT, deviceId: DEVICE }, 'finished')];
    await suppressions.refresh();
    expect(changes, 'finished').to.equal(2);

    records.push(record({ orgId: ORG }, 'running', 5000));
    await suppressions.refresh();
    expect(suppressions.active).to.equal(2);
    expect(suppressions.covers({ org_id: ORG, project_id: DEVICE }, device(null))).to.equal(true);

    // Past its lifetime a suppression lapses: the organization's events are taken again.
    now = 6000;
    await suppressions.refresh();
    expect(suppressions.active).to.equal(1);
    expect(suppressions.covers({ org_id: ORG, project_id: DEVICE }, device(null))).to.equal(false);
    await suppressions.stop();
  });

  it('follows a scope erased again: the new erasure is told as new though the first was seen, and an ended window never suppresses again', async () => {
    const scope = { orgId: ORG, projectId: PROJECT };
    const first: ErasureRecord = { ...record(scope, 'finished', 1000), startedAtMs: 0 };
    let records: ErasureRecord[] = [first];
    let changes = 0;
    let now = 0;
    const suppressions = await createErasureSuppressions({
      // A store that answers every record, old or new: the rule holds in the suppressions whatever the store answers.
      store: { active: async () => records },
      settings: { pollMs: 1000, suppressDays: 30 },
      logger,
      changed: () => changes++,
      now: () => now,
      polling: false,
    });
    const event = { org_id: ORG, project_id: PROJECT };
    expect(suppressions.covers(event, () => null)).to.equal(true);
    expect(changes).to.equal(1);

    // The first's window ends: the project's events are taken again, and nothing is told.
    now = 2000;
    await suppressions.refresh();
    expect(suppressions.covers(event, () => null)).to.equal(false);
    expect(changes).to.equal(1);

    // Erased again: a new record, new to this process even though it knew the scope's first.
    const second: ErasureRecord = { ...record(scope, 'running', 50_000), erasureId: erasureId(scope, 2), startedAtMs: 2000, requestedAtMs: 2000 };
    records = [first, second];
    await suppressions.refresh();
    expect(suppressions.covers(event, () => null)).to.equal(true);
    expect(suppressions.active).to.equal(1);
    expect(changes).to.equal(2);

    // The second finishes: told once more; when its window ends nothing suppresses the project, the first no more than the second.
    records = [first, { ...second, status: 'finished', finishedAtMs: 3000 }];
    await suppressions.refresh();
    expect(changes, 'the second finished').to.equal(3);
    now = 60_000;
    await suppressions.refresh();
    expect(suppressions.active).to.equal(0);
    expect(suppressions.covers(event, () => null)).to.equal(false);
    expect(changes).to.equal(3);
    await suppressions.stop();
  });

  it('keeps the last list in force while the store cannot be read', async () => {
    let failing = false;
    const suppressions = await createErasureSuppressions({
      store: {
        active: async () => {
          if (failing) throw new Error('store down');
          return [record({ orgId: ORG }, 'finished')];
        },
      },
      settings: { pollMs: 1000, suppressDays: 30 },
      logger,
      now: () => 0,
      polling: false,
    });
    failing = true;
    await suppressions.refresh().catch(() => undefined);
    expect(suppressions.covers({ org_id: ORG, project_id: PROJECT }, () => null)).to.equal(true);
    await suppressions.stop();
  });
});
