import { expect } from 'chai';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';

async function feedOf(gateway: TestGateway, tenant: Tenant, query = '?limit=200'): Promise<CanonicalEvent[]> {
  const res = await gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, {
    headers: await tenant.headers(),
  });
  return res.body.data.items;
}

/** Waits until the tenant's feed holds `count` events, then checks it holds no more. */
export async function feedSettlesAt(gateway: TestGateway, tenant: Tenant, count: number): Promise<CanonicalEvent[]> {
  return waitFor(`${count} events in the feed`, async () => {
    const items = await feedOf(gateway, tenant);
    expect(items.length).to.be.at.most(count);
    return items.length === count ? items : undefined;
  }, 30_000);
}
