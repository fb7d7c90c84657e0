import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { repoRoot } from '../../support/processes.js';
import { skipUnlessServerStoreTested } from '../../support/stores.js';
import type { TestGateway } from '../../support/test-gateway.js';
import { gatewayOn } from './gateways.js';

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * `npm run erase` as an operator runs it: a process of its own beside a running gateway, with
 * the store's variables and nothing else (no token settings). On the server only: chDB's
 * directory belongs to the gateway's process.
 */
describe('npm run erase, a process beside a running gateway [clickhouse-server]', function () {
  this.timeout(120_000);
  let gw: TestGateway;

  before(async function () {
    skipUnlessServerStoreTested(this);
    gw = await gatewayOn('clickhouse-server');
  });

  function erase(args: readonly string[]): Promise<Run> {
    const clickhouse = gw.config.clickhouse!;
    const child = spawn(process.execPath, ['--import', 'tsx', join(repoRoot, 'src', 'erasure', 'main.ts'), ...args], {
      cwd: repoRoot,
      env: {
        PATH: process.env['PATH'],
        CLICKHOUSE_URL: clickhouse.url,
        CLICKHOUSE_DATABASE: clickhouse.database,
        CLICKHOUSE_REQUEST_TIMEOUT_MS: String(clickhouse.requestTimeoutMs),
        // A server in a container has a user of its own, which the URL alone does not carry.
        ...(clickhouse.username === undefined ? {} : { CLICKHOUSE_USER: clickhouse.username }),
        ...(clickhouse.password === undefined ? {} : { CLICKHOUSE_PASSWORD: clickhouse.password }),
        ERASURE_POLL_MS: String(gw.config.erasure.pollMs),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stdout, stderr })));
  }

  it('erases a device, prints its progress and the audit record, and a second run finds it finished', async () => {
    const tenant = gw.tenant();
    const headers = await tenant.headers();
    const [erased, kept] = [uuid(), uuid()];
    const events = [erased, erased, erased, kept].map((device_id) => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, device_id }));
    await gw.seed(events);

    const args = ['--org', tenant.orgId.toUpperCase(), '--project', tenant.projectId, '--device', erased, '--requested-by', 'ops:carol', '--reason', 'ticket 7'];
    const first = await erase(args);
    expect(first.code, first.stderr).to.equal(0);
    expect(first.stderr).to.match(/started/).and.match(/3 events to remove/).and.match(/finished, 3 events removed/);
    const record = JSON.parse(first.stdout) as Record<string, unknown>;
    expect(record).to.deep.include({
      org_id: tenant.orgId,
      project_id: tenant.projectId,
      device_id: erased,
      requested_by: 'ops:carol',
      reason: 'ticket 7',
      status: 'finished',
      events_removed: 3,
      removed_by_this_run: 3,
      already_finished: false,
    });

    // The running gateway shows what is left, and drops the device's events that arrive now.
    const page = await gw.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events`, { headers });
    expect(page.body.data.items.map((e) => e.id)).to.deep.equal([events[3]!.id]);
    const late = await gw.runtime.ingestor.ingestMessages([{ value: Buffer.from(JSON.stringify(canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, device_id: erased }))) }]);
    expect(late).to.deep.equal({ stored: 0, rejected: [] });

    const second = await erase(args);
    expect(second.code, second.stderr).to.equal(0);
    expect(JSON.parse(second.stdout)).to.deep.include({ ...record, removed_by_this_run: 0, already_finished: true });
  });

  it('refuses a command line it cannot run with exit code 2 and the usage, touching nothing', async () => {
    const run = await erase(['--org', 'acme', '--requested-by', 'ops:carol']);
    expect(run.code).to.equal(2);
    expect(run.stderr).to.match(/--org: "acme" is not a UUID/).and.match(/usage: npm run erase/);
    expect(run.stdout).to.equal('');
  });
});
