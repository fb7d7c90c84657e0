import { randomBytes } from 'node:crypto';
import type { Kafka } from 'kafkajs';
import type { CanonicalEventPageResponse, EnrollmentAccepted } from '../../../src/generated/schema-types.js';
import { API_PREFIX } from '../../../src/http/app.js';
import { hs256Token, uuid } from '../../support/factories.js';
import { request, type HttpResponse } from '../../support/http-client.js';
import { received, type ReceivedMessage } from '../../support/kafka-topics.js';
import type { Tenant, TestGateway } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import type { Deployment } from './acls.js';
import { commandTopicEnvironment, commandTopicNames } from '../../support/command-topics.js';

/** Topic and group names of their own, under a prefix a test can grant ACLs on. */
export function deployment(prefix: string): Deployment & { readonly env: Record<string, string> } {
  const run = `${prefix}${randomBytes(4).toString('hex')}`;
  const d = {
    events: `${run}.platform.events`,
    commands: commandTopicNames((name) => `${run}.${name}`),
    deadLetter: `${run}.platform.events.dlq`,
    group: `${run}.ingest`,
  };
  return {
    ...d,
    env: {
      EVENTS_TOPICS: d.events,
      ...commandTopicEnvironment(d.commands),
      EVENTS_DLQ_TOPIC: d.deadLetter,
      KAFKA_CONSUMER_GROUP: d.group,
      KAFKA_TOPIC_PARTITIONS: '1',
      COMMAND_TIMEOUT_MS: '5000',
      INGEST_BATCH_WAIT_MS: '50',
    },
  };
}

export function readyz(baseUrl: string): Promise<HttpResponse<{ detail?: string }>> {
  return request<{ detail?: string }>('GET', new URL('/readyz', baseUrl).toString());
}

/** What the helpers below need of a gateway and a tenant, in-process or a process of its own. */
export type Caller = Pick<TestGateway, 'call'>;
export type CallerTenant = Pick<Tenant, 'projectId' | 'headers'>;

/** A gateway running as a process of its own (test/support/gateway-process.ts), signing with `secret`. */
export function remoteGateway(url: string, secret: string): Caller & { tenant(): CallerTenant } {
  return {
    call: (method, path, options) => request(method, `${url}${API_PREFIX}${path}`, options),
    tenant() {
      const orgId = uuid();
      return {
        projectId: uuid(),
        headers: async () => ({ authorization: `Bearer ${await hs256Token(secret, { orgIds: [orgId] })}`, 'org-id': orgId }),
      };
    },
  };
}

/** Enrolls a new device through the gateway and returns the answer and where it went. */
export async function enroll(gateway: Caller, tenant: CallerTenant): Promise<{ res: HttpResponse<{ data: EnrollmentAccepted }>; deviceId: string }> {
  const deviceId = uuid();
  const res = await gateway.call<{ data: EnrollmentAccepted }>('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${deviceId}/enroll`, {
    headers: await tenant.headers(),
    body: { display_name: 'Pump', enrollment_type: 'factory' },
  });
  return { res, deviceId };
}

/** Waits until the tenant's feed shows an event of the device. */
export function inFeed(gateway: Caller, tenant: CallerTenant, deviceId: string): Promise<true> {
  return waitFor(`the device ${deviceId} in the feed`, async () => {
    const feed = await gateway.call<CanonicalEventPageResponse>('GET', `/projects/${tenant.projectId}/events?device_id=${deviceId}`, {
      headers: await tenant.headers(),
    });
    return feed.status === 200 && feed.body.data.items.length > 0 ? true : undefined;
  }, 30_000);
}

/** Reads the topic from its beginning (as the super user) until a message passes `predicate`. */
export async function findOnTopic(kafka: Kafka, topic: string, predicate: (m: ReceivedMessage) => boolean): Promise<ReceivedMessage> {
  const consumer = kafka.consumer({ groupId: `test-reader-${randomBytes(6).toString('hex')}`, maxWaitTimeInMs: 100 });
  const seen: ReceivedMessage[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ topic: t, partition, message }) => {
        seen.push(received(t, partition, message));
      },
    });
    return await waitFor(`a matching message on ${topic}`, async () => seen.find(predicate), 20_000, 50);
  } finally {
    await consumer.disconnect();
  }
}

/** An unsigned JWT (alg none), which the test broker's unsecured OAUTHBEARER validator accepts. */
export function unsecuredJwt(sub: string, lifetimeS = 3600): string {
  const now = Math.floor(Date.now() / 1000);
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none' })}.${part({ sub, iat: now, exp: now + lifetimeS })}.`;
}
