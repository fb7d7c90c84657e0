import type { CanonicalEvent, CanonicalEventPageResponse, EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { hs256Token, uuid } from '../../support/factories.js';
import { request, type HttpResponse } from '../../support/http-client.js';
import type { Stack } from '../../support/stack.js';

/** An organization, a project, a fleet and a device no other test uses, with a caller's headers. */
export interface Tenant {
  readonly orgId: string;
  readonly projectId: string;
  readonly fleetId: string;
  readonly deviceId: string;
  readonly headers: Readonly<Record<string, string>>;
}

export async function newTenant(secret: string): Promise<Tenant> {
  const orgId = uuid();
  const token = await hs256Token(secret, { orgIds: [orgId] });
  return { orgId, projectId: uuid(), fleetId: uuid(), deviceId: uuid(), headers: { authorization: `Bearer ${token}`, 'org-id': orgId } };
}

export interface EnrollmentAnswer {
  readonly ok: 1;
  readonly data: EnrollmentAccepted;
  readonly meta: null;
}

export interface EnrollOptions {
  readonly idempotencyKey?: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: Readonly<Record<string, unknown>>;
}

export function enroll(baseUrl: string, tenant: Tenant, options: EnrollOptions = {}): Promise<HttpResponse<EnrollmentAnswer>> {
  const { projectId, fleetId, deviceId } = tenant;
  const { idempotencyKey } = options;
  return request<EnrollmentAnswer>('POST', `${baseUrl}${API_PREFIX}/projects/${projectId}/fleets/${fleetId}/devices/${deviceId}/enroll`, {
    headers: { ...tenant.headers, ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }), ...options.headers },
    body: options.body ?? { display_name: 'Pump 7' },
  });
}

async function feedPage(baseUrl: string, tenant: Tenant, cursor: string | null): Promise<CanonicalEventPageResponse> {
  const query = new URLSearchParams({ limit: '200', ...(cursor === null ? {} : { cursor }) });
  const res = await request<CanonicalEventPageResponse>('GET', `${baseUrl}${API_PREFIX}/projects/${tenant.projectId}/events?${query.toString()}`, {
    headers: tenant.headers,
  });
  if (res.status !== 200) throw new Error(`the feed answered ${res.status}: ${res.text}`);
  return res.body;
}

/** The first page of the tenant's feed (up to 200 events), from one gateway. */
export async function firstPage(baseUrl: string, tenant: Tenant): Promise<CanonicalEvent[]> {
  return (await feedPage(baseUrl, tenant, null)).data.items;
}

/**
 * Every page of the tenant's feed, following next_cursor. Pages alternate between the
 * two gateways, so each cursor is redeemed by the replica that did not issue it.
 */
export async function wholeFeed(stack: Stack, tenant: Tenant): Promise<CanonicalEvent[]> {
  const events: CanonicalEvent[] = [];
  let cursor: string | null = null;
  for (let page = 0; ; page += 1) {
    const baseUrl = page % 2 === 0 ? stack.gatewayUrls[0] : stack.gatewayUrls[1];
    const body = await feedPage(baseUrl, tenant, cursor);
    events.push(...body.data.items);
    if (!body.meta.has_more || body.meta.next_cursor === null) return events;
    cursor = body.meta.next_cursor;
  }
}
