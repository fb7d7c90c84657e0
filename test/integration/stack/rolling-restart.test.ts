import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import type { CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { uuid } from '../../support/factories.js';
import { createStack, type Stack, type StackNode } from '../../support/stack.js';
import { waitFor } from '../../support/wait-for.js';
import { newTenant, type Tenant } from './stack-helpers.js';

const STACK_START_BUDGET_MS = 300_000;
const CLIENTS = 50;

interface Outcome {
  readonly status: number;
  readonly text: string;
}

/** One request on a keep-alive agent of one socket: a client that holds its connection. */
function send(agent: Agent, url: string, method: string, headers: Record<string, string>, body?: string): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method, agent, headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * HAProxy in front of the two gateways (scripts/stack-start.sh), 50 clients on keep-alive
 * connections, and each gateway in turn stopped with SIGTERM and started again. The
 * health check on /readyz takes a draining gateway out of rotation, HAProxy retries a
 * refused connection on the other one, and a gateway answers what it accepted before it
 * exits: no client sees a failure, and every enrollment answered 202 reaches the feed.
 */
describe('a rolling restart of the gateways behind HAProxy, under 50 keep-alive clients', function () {
  let stack: Stack | undefined;

  before(async function () {
    this.timeout(STACK_START_BUDGET_MS);
    stack = await createStack();
    await stack.start();
  });

  after(async function () {
    this.timeout(120_000);
    await stack?.stop();
  });

  it('fails no request and loses no acknowledged enrollment while each gateway restarts in turn', async function () {
    this.timeout(STACK_START_BUDGET_MS);
    const running = stack!;
    const tenants: Tenant[] = await Promise.all(Array.from({ length: CLIENTS }, () => newTenant(running.secret)));
    const agents = tenants.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
    const failures: string[] = [];
    const acknowledged = new Map<Tenant, string[]>(tenants.map((t) => [t, []]));
    let answered = 0;
    let stopping = false;

    const client = async (i: number): Promise<void> => {
      const tenant = tenants[i]!;
      const agent = agents[i]!;
      for (let n = 0; !stopping; n += 1) {
        const api = `${running.lbUrl}${API_PREFIX}/projects/${tenant.projectId}`;
        try {
          if (n % 2 === 0) {
            // A retry that HAProxy makes after a dropped connection carries the same key: one command.
            const res = await send(agent, `${api}/fleets/${tenant.fleetId}/devices/${uuid()}/enroll`, 'POST', { ...tenant.headers, 'idempotency-key': uuid() }, JSON.stringify({ display_name: `client ${i}` }));
            if (res.status !== 202) failures.push(`${new Date().toISOString()} enroll ${res.status} ${res.text.slice(0, 120)}`);
            else acknowledged.get(tenant)!.push((JSON.parse(res.text) as { data: { enrollment_id: string } }).data.enrollment_id);
          } else {
            const res = await send(agent, `${api}/events?limit=5`, 'GET', tenant.headers);
            if (res.status !== 200) failures.push(`${new Date().toISOString()} feed ${res.status} ${res.text.slice(0, 120)}`);
          }
        } catch (error) {
          failures.push(`client ${i}: ${(error as Error).message}`);
        }
        answered += 1;
      }
    };
    const clients = Array.from({ length: CLIENTS }, (_, i) => client(i));

    /** Lines that the node's current run logged for API requests: HAProxy routes to it again. */
    const servedSinceStart = (node: StackNode): number => {
      const text = running.logText(node);
      const run = text.slice(text.lastIndexOf('\n==== '));
      return run.split('\n').filter((line) => line.startsWith('{') && line.includes('"msg":"request"')).length;
    };

    try {
      await waitFor('load under way', async () => (answered >= 200 ? true : undefined), 60_000, 50);
      for (const node of ['gateway-1', 'gateway-2'] as const) {
        console.log(`      ${new Date().toISOString()} SIGTERM to ${node} after ${answered} requests`);
        await running.terminateGateway(node);
        const whileDown = answered;
        await waitFor(`requests answered while ${node} is down`, async () => (answered >= whileDown + 100 ? true : undefined), 60_000, 50);
        await running.startAgain();
        await waitFor(`HAProxy routing to ${node} again`, async () => (servedSinceStart(node) >= 20 ? true : undefined), 60_000, 100);
      }
    } finally {
      stopping = true;
      await Promise.all(clients);
      for (const agent of agents) agent.destroy();
    }

    // HAProxy's own lines say which gateway it took out of rotation, when and why.
    const lbLog = readFileSync(join(running.dir, 'logs', 'haproxy.log'), 'utf8').split('\n').filter((l) => l.startsWith('[')).slice(-12).join('\n');
    expect(failures.length, `failed requests out of ${answered}, the first: ${failures.slice(0, 3).join(' | ')}\nHAProxy:\n${lbLog}`).to.equal(0);
    const total = [...acknowledged.values()].reduce((sum, ids) => sum + ids.length, 0);
    expect(total).to.be.greaterThan(CLIENTS);
    console.log(`      ${answered} requests through HAProxy, ${total} enrollments acknowledged, none failed`);

    // Every acknowledged enrollment reaches the feed, through the consumer.
    for (const [tenant, ids] of acknowledged) {
      await waitFor(`tenant ${tenant.orgId}'s ${ids.length} enrollments in the feed`, async () => {
        const seen = new Set<string>();
        let cursor: string | null = null;
        do {
          const query = new URLSearchParams({ limit: '200', domain: 'devices', ...(cursor === null ? {} : { cursor }) });
          const res = await fetch(`${running.lbUrl}${API_PREFIX}/projects/${tenant.projectId}/events?${query.toString()}`, { headers: tenant.headers });
          if (res.status !== 200) return undefined;
          const page = (await res.json()) as CanonicalEventPageResponse;
          for (const e of page.data.items) if (e.correlation_id) seen.add(e.correlation_id);
          cursor = page.meta.next_cursor;
        } while (cursor !== null);
        return ids.every((id) => seen.has(id)) ? true : undefined;
      }, 60_000, 250);
    }
  });
});
