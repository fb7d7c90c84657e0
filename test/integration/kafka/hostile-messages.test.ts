import { expect } from 'chai';
import type { Message } from 'kafkajs';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { MAX_JSON_DEPTH } from '../../../src/json/bounded-json.js';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../../../src/kafka/message-bytes.js';
import { canonicalEvent, eventSeries, uuid } from '../../support/factories.js';
import { committedToEnd, readToEnd, type ReceivedMessage } from '../../support/kafka-topics.js';
import type { Tenant } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { wholeFeed } from './feed-helpers.js';
import { describeOnEachStore, type KafkaSuite } from './kafka-suite.js';

/** A canonical event's JSON text whose payload nests `depth` arrays inside its object: valid but for the depth. */
function nestedEventText(tenant: Tenant, depth: number): string {
  const text = JSON.stringify(canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, payload: { deep: 'HERE' } }));
  return text.replace('"HERE"', `${'['.repeat(depth - 2)}${']'.repeat(depth - 2)}`);
}

/**
 * What other services may publish to platform.events, each followed on the same partition
 * by valid events that must reach the feed: no message, however malformed or large, may
 * stop a partition, and each is on the DLQ with its reason.
 */
describeOnEachStore('hostile messages from other services', function (suite) {
  this.timeout(180_000);

  /** Sends on one key, so on one partition, in order; sends of at most `perSend` messages keep each request under the broker's limit. */
  async function produce(s: KafkaSuite, messages: readonly Message[], perSend = 1000): Promise<{ partition: number; offsets: bigint[] }> {
    const producer = s.kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const offsets: bigint[] = [];
    let partition = -1;
    try {
      for (let i = 0; i < messages.length; i += perSend) {
        const chunk = messages.slice(i, i + perSend);
        const [sent] = await producer.send({ topic: s.topics.events, acks: -1, messages: [...chunk] });
        partition = sent!.partition;
        for (let k = 0; k < chunk.length; k += 1) offsets.push(BigInt(sent!.baseOffset!) + BigInt(k));
      }
    } finally {
      await producer.disconnect();
    }
    return { partition, offsets };
  }

  const event = (tenant: Tenant, overrides: Partial<CanonicalEvent> = {}) => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId, ...overrides });

  async function expectInFeed(s: KafkaSuite, tenant: Tenant, events: readonly CanonicalEvent[]): Promise<void> {
    const ids = new Set(events.map((e) => e.id));
    await waitFor(`${ids.size} events in the feed`, async () => {
      const feed = new Set((await wholeFeed(s.gateway, tenant)).map((e) => e.id));
      return [...ids].every((id) => feed.has(id)) ? true : undefined;
    }, 90_000, 250);
  }

  const deadLettersOf = async (s: KafkaSuite, key: string): Promise<ReceivedMessage[]> =>
    (await readToEnd(s.kafka, [s.topics.deadLetter])).filter((m) => m.key === key);

  it('dead-letters each malformed message with its reason, and the valid events after it on its partition reach the feed', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const key = uuid();
    const hostile: { label: string; value: Buffer | string | null; reason: string }[] = [
      { label: 'a payload 20,000 levels deep', value: nestedEventText(tenant, 20_000), reason: 'json-limit-exceeded' },
      { label: 'one level past the bound', value: nestedEventText(tenant, MAX_JSON_DEPTH + 1), reason: 'json-limit-exceeded' },
      { label: 'a number beyond a double', value: JSON.stringify(event(tenant)).replace('21.5', '1e400'), reason: 'json-limit-exceeded' },
      { label: 'a __proto__ key', value: JSON.stringify(event(tenant)).replace('"temperature"', '"__proto__"'), reason: 'json-limit-exceeded' },
      { label: 'an empty value', value: '', reason: 'empty-value' },
      { label: 'a tombstone', value: null, reason: 'empty-value' },
      { label: 'bytes that are not UTF-8', value: Buffer.concat([Buffer.from(JSON.stringify(event(tenant)).slice(0, -2)), Buffer.from([0xc3, 0x28, 0x22, 0x7d])]), reason: 'invalid-json' },
      { label: 'a schema violation', value: JSON.stringify({ ...event(tenant), id: 'not-a-uuid' }), reason: 'schema-violation' },
    ];
    // A valid event after every hostile one, and 20 at the end.
    const valid: CanonicalEvent[] = [];
    const messages: Message[] = [];
    for (const h of hostile) {
      messages.push({ key, value: h.value });
      const next = event(tenant);
      valid.push(next);
      messages.push({ key, value: JSON.stringify(next) });
    }
    const tail = eventSeries(20, { org_id: tenant.orgId, project_id: tenant.projectId });
    valid.push(...tail);
    messages.push(...tail.map((e) => ({ key, value: JSON.stringify(e) })));

    const { partition, offsets } = await produce(s, messages);
    await expectInFeed(s, tenant, valid);
    expect(new Set((await wholeFeed(s.gateway, tenant)).map((e) => e.id))).to.deep.equal(new Set(valid.map((e) => e.id)));
    await waitFor('the partition committed to its end', () => committedToEnd(s.kafka, s.consumerGroup, s.topics.events), 60_000, 200);

    const dead = await deadLettersOf(s, key);
    expect(dead.map((d) => d.headers['dlq-reason']), hostile.map((h) => h.label).join('; ')).to.deep.equal(hostile.map((h) => h.reason));
    const hostileOffsets = hostile.map((_, i) => String(offsets[2 * i]));
    expect(dead.map((d) => [d.headers['dlq-source-partition'], d.headers['dlq-source-offset']])).to.deep.equal(hostileOffsets.map((o) => [String(partition), o]));
  });

  it("keeps two organizations' events that share an id, sent back to back on one key, and folds a redelivered copy", async () => {
    const s = suite();
    const a = s.gateway.tenant();
    const b = s.gateway.tenant();
    const id = uuid();
    const occurred = '2026-05-05T05:05:05.123456Z';
    const ofA = event(a, { id, occurred_at: occurred });
    const ofB = event(b, { id, occurred_at: occurred });
    const key = uuid();
    await produce(s, [ofA, ofB, { ...ofA, occurred_at: '2026-05-05T05:05:05.123456+00:00' }].map((e) => ({ key, value: JSON.stringify(e) })));
    await expectInFeed(s, a, [ofA]);
    await expectInFeed(s, b, [ofB]);
    expect((await wholeFeed(s.gateway, a)).map((e) => e.id)).to.deep.equal([id]);
    expect((await wholeFeed(s.gateway, b)).map((e) => e.id)).to.deep.equal([id]);
  });

  it('dead-letters a burst of invalid events whose letters together far exceed max.message.bytes, and goes on', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const key = uuid();
    const pad = 'x'.repeat(20_000);
    // 200 letters of about 20 KB: about four times what one batch may carry.
    const invalid = Array.from({ length: 200 }, () => JSON.stringify({ ...event(tenant), id: 'not-a-uuid', source_service: pad }));
    const after = eventSeries(10, { org_id: tenant.orgId, project_id: tenant.projectId });
    await produce(s, [...invalid.map((value) => ({ key, value })), ...after.map((e) => ({ key, value: JSON.stringify(e) }))], 40);
    await expectInFeed(s, tenant, after);
    await waitFor('the partition committed to its end', () => committedToEnd(s.kafka, s.consumerGroup, s.topics.events), 60_000, 200);
    const dead = await deadLettersOf(s, key);
    expect(dead).to.have.length(200);
    expect(new Set(dead.map((d) => d.headers['dlq-reason']))).to.deep.equal(new Set(['schema-violation']));
    expect(dead.map((d) => d.value), 'each letter whole, in order').to.deep.equal(invalid);
    expect(dead.filter((d) => d.headers['dlq-truncated'] !== undefined)).to.deep.equal([]);
  });

  it('stores a valid event near the broker limit, and sends an invalid one too large to dead-letter whole as a reference to its source', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const key = uuid();
    const large = event(tenant, { payload: { blob: 'b'.repeat(900_000) } });
    // Invalid, and so large that the dead-letter headers would push its letter past the DLQ's limit.
    const huge = 'n'.repeat(KAFKA_DEFAULT_MAX_MESSAGE_BYTES - 300);
    const after = eventSeries(5, { org_id: tenant.orgId, project_id: tenant.projectId });
    const { partition, offsets } = await produce(s, [{ key, value: JSON.stringify(large) }, { key, value: huge }, ...after.map((e) => ({ key, value: JSON.stringify(e) }))], 1);
    await expectInFeed(s, tenant, [large, ...after]);
    const stored = (await wholeFeed(s.gateway, tenant)).find((e) => e.id === large.id);
    expect(stored?.payload).to.deep.equal(large.payload);
    await waitFor('the partition committed to its end', () => committedToEnd(s.kafka, s.consumerGroup, s.topics.events), 60_000, 200);
    const [reference, ...more] = await deadLettersOf(s, key);
    expect(more).to.deep.equal([]);
    expect(reference!.headers).to.deep.include({
      'dlq-reason': 'invalid-json',
      'dlq-truncated': 'true',
      'dlq-original-value-bytes': String(Buffer.byteLength(huge)),
      'dlq-source-topic': s.topics.events,
      'dlq-source-partition': String(partition),
      'dlq-source-offset': String(offsets[1]),
    });
    expect(reference!.value).to.equal(huge.slice(0, 1024));
  });
});
