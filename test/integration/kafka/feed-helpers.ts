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

/** Every event of the tenant's feed, page by page through the cursor; a page that is not a 200 throws. */
export async function wholeFeed(gateway: TestGateway, tenant: Tenant): Promise<CanonicalEvent[]> {
  const headers = await tenant.headers();
  const items: CanonicalEvent[] = [];
  let cursor: string | null = null;
  do {
    const query: string = `?limit=200${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
    const res = await gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events${query}`, { headers });
    if (res.status !== 200) throw new Error(`the feed answered ${res.status}: ${res.text}`);
    items.push(...res.body.data.items);
    cursor = res.body.meta.next_cursor;
  } while (cursor !== null);
  return items;
}
