import { expect } from 'chai';
import type { CanonicalEvent, CanonicalEventPageResponse } from '../../../src/generated/schema-types.js';
import type { Tenant } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { kafkaSuite } from './kafka-suite.js';

async function feedOf(tenant: Tenant, query = '?limit=200'): Promise<CanonicalEvent[]> {
  const res = await kafkaSuite().gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, {
    headers: await tenant.headers(),
  });
  return res.body.data.items;
}

/** Waits until the tenant's feed holds `count` events, then checks it holds no more. */
export async function feedSettlesAt(tenant: Tenant, count: number): Promise<CanonicalEvent[]> {
  return waitFor(`${count} events in the feed`, async () => {
    const items = await feedOf(tenant);
    expect(items.length).to.be.at.most(count);
    return items.length === count ? items : undefined;
  }, 30_000);
}

