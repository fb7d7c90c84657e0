import { setTimeout as pause } from 'node:timers/promises';
import type { Kafka, Producer } from 'kafkajs';
import type { CanonicalEvent, CanonicalEventPageResponse, EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { canonicalEvent, hs256Token, uuid } from '../../support/factories.js';
import { request, type HttpResponse } from '../../support/http-client.js';
import type { Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait-for.js';

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

export function enroll(baseUrl: string, tenant: Tenant, idempotencyKey?: string): Promise<HttpResponse<EnrollmentAnswer>> {
  const { projectId, fleetId, deviceId } = tenant;
  return request<EnrollmentAnswer>('POST', `${baseUrl}${API_PREFIX}/projects/${projectId}/fleets/${fleetId}/devices/${deviceId}/enroll`, {
    headers: { ...tenant.headers, ...(idempotencyKey === undefined ? {} : { 'idempotency-key': idempotencyKey }) },
    body: { display_name: 'Pump 7' },
  });
}

async function feedPage(baseUrl: string, tenant: Tenant, cursor: string | null): Promise<CanonicalEventPageResponse> {
  const query = new URLSearchParams({ limit: '200', ...(cursor === null ? {} : { cursor }) });
  const res = await request<CanonicalEventPageResponse>('GET', `${baseUrl}${API_PREFIX}/projects/${tenant.projectId}/events?${query}`, {
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

/** True once the group has committed every partition of the topic up to its end. */
export async function committedToEnd(kafka: Kafka, groupId: string, topic: string): Promise<true | undefined> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const ends = await admin.fetchTopicOffsets(topic);
    const [committed] = await admin.fetchOffsets({ groupId, topics: [topic] });
    const byPartition = new Map((committed?.partitions ?? []).map((p) => [p.partition, p.offset]));
    return ends.every((end) => end.high === '0' || byPartition.get(end.partition) === end.high) ? true : undefined;
  } finally {
    await admin.disconnect();
  }
}

/** The values of every message now on the topic, read with a group of its own up to each partition's end. */
export async function messagesOn(kafka: Kafka, topic: string): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic).finally(() => admin.disconnect());
  const values: string[] = [];
  const next = new Map<number, bigint>();
  const reader = kafka.consumer({ groupId: `stack-test-reader-${uuid()}`, maxWaitTimeInMs: 100 });
  await reader.connect();
  try {
    await reader.subscribe({ topics: [topic], fromBeginning: true });
    await reader.run({
      eachMessage: async ({ partition, message }) => {
        values.push(message.value?.toString() ?? '');
        next.set(partition, BigInt(message.offset) + 1n);
      },
    });
    await waitFor(`${topic} read to its end`, async () =>
      ends.every((end) => BigInt(end.high) <= (next.get(end.partition) ?? 0n)) ? true : undefined,
    );
    return values;
  } finally {
    await reader.disconnect();
  }
}

/** Another service publishing events without pause until stop(); `produced` holds the ids of acknowledged sends. */
export interface ContinuousProducer {
  readonly produced: readonly string[];
  /** Throws what made the producer fail, if it failed; probes call it so a failure is reported, not waited out. */
  check(): void;
  stop(): Promise<void>;
}

const EVENTS_PER_SEND = 10;
// The publishing service's pace (200 events/s), not a wait for anything: every wait in
// the tests is on a condition.
const SEND_EVERY_MS = 50;

export function produceContinuously(producer: Producer, topic: string, tenant: Tenant): ContinuousProducer {
  const produced: string[] = [];
  const firstAt = Date.parse('2026-03-01T00:00:00Z');
  let running = true;
  let failure: unknown;
  const send = async () => {
    // One millisecond apart, so the feed's order is the order of production.
    const events = Array.from({ length: EVENTS_PER_SEND }, (_, i) =>
      canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, occurred_at: new Date(firstAt + produced.length + i).toISOString() }),
    );
    await producer.send({
      topic,
      acks: -1,
      messages: events.map((e) => ({
        key: e.device_id ?? e.project_id,
        value: JSON.stringify(e),
        headers: { 'content-type': 'application/json', schema: 'canonical-event.schema.json', 'schema-version': '1' },
      })),
    });
    produced.push(...events.map((e) => e.id));
  };
  const loop = (async () => {
    while (running) {
      await send();
      await pause(SEND_EVERY_MS);
    }
  })().catch((error: unknown) => {
    failure = error;
  });
  return {
    produced,
    check() {
      if (failure !== undefined) throw new Error('the event producer failed', { cause: failure });
    },
    async stop() {
      running = false;
      await loop;
      this.check();
    },
  };
}
