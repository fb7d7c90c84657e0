import { expect } from 'chai';
import type { Message } from 'kafkajs';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { replayGroup } from '../../../src/dead-letters/replay.js';
import { eventSeries, uuid } from '../../support/factories.js';
import { committedOffsets, topicEnds, type ReceivedMessage } from '../../support/kafka-topics.js';
import type { Tenant } from '../../support/test-gateway.js';
import { waitFor } from '../../support/wait-for.js';
import { confluentFramed, dlq, eventsThroughSentinel, ingestedThrough, produceEvents, runDlq } from './dead-letter-replay-tool.js';
import { wholeFeed } from './feed-helpers.js';
import { describeOnEachStore, topicReader, type KafkaSuite } from './kafka-suite.js';

const PREFIXED = 5000;
const SCHEMA_VIOLATIONS = 3000;
const OUT_OF_RANGE = 2000;

/** Replayed copies on the events topic (they carry dlq-replay-count) whose key is `key`. */
const replayedOf = (messages: readonly ReceivedMessage[], key: string) => messages.filter((m) => m.key === key && m.headers['dlq-replay-count'] !== undefined);
const idOf = (m: ReceivedMessage) => (JSON.parse(m.value ?? '{}') as { id?: string }).id;

describeOnEachStore('the dead-letter command', function (suite) {
  this.timeout(240_000);

  /** Dead-letters `messages` (all with `key`) through the suite's gateway and waits for each on the DLQ. */
  async function deadLetter(s: KafkaSuite, key: string, messages: readonly Message[]): Promise<ReceivedMessage[]> {
    const reader = await topicReader([s.topics.deadLetter]);
    try {
      await produceEvents(s, messages.map((m) => ({ ...m, key })));
      return await reader.waitFor('the letters on the DLQ', (m) => m.key === key, messages.length, 120_000);
    } finally {
      await reader.stop();
    }
  }

  const feedIds = async (s: KafkaSuite, tenant: Tenant) => (await wholeFeed(s.gateway, tenant)).map((e) => e.id);

  it('replays 10,000 letters of mixed reasons: killed mid-run and run again, each selected letter reaches the feed once and nothing else is sent', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const key = uuid();
    const scope = { org_id: tenant.orgId, project_id: tenant.projectId };
    const valid = eventSeries(PREFIXED, scope, Date.parse('2026-04-01T00:00:00Z'));
    const messages: Message[] = [
      ...valid.map((e) => ({ value: confluentFramed(e) })),
      ...eventSeries(SCHEMA_VIOLATIONS, scope, Date.parse('2026-04-02T00:00:00Z')).map((e) => ({ value: JSON.stringify({ ...e, id: 'not-a-uuid' }) })),
      ...eventSeries(OUT_OF_RANGE, scope).map((e) => ({ value: JSON.stringify({ ...e, occurred_at: '2300-01-01T00:00:00Z' }) })),
    ];
    const dead = await topicReader([s.topics.deadLetter]);
    try {
      await produceEvents(s, messages.map((m) => ({ ...m, key })));
      const letters = await dead.waitFor('the letters on the DLQ', (m) => m.key === key, messages.length, 120_000);
      expect(letters.filter((m) => m.headers['dlq-reason'] === 'invalid-json')).to.have.length(PREFIXED);

      // inspect counts what was dead-lettered (this test's and the earlier tests'), and writes nothing.
      const inspected = await dlq(s, ['inspect', '--strip-confluent-prefix']);
      expect(inspected).to.match(new RegExp(`\\n\\s+${messages.length}  ${tenant.projectId}\\n`));
      const total = Number(/^dead letters: (\d+),/.exec(inspected)?.[1]);
      await waitFor(`the reader at the ${total} letters inspect counted`, async () => {
        expect(dead.messages.length).to.be.at.most(total);
        return dead.messages.length === total ? true : undefined;
      }, 60_000);
      for (const reason of new Set(dead.messages.map((m) => m.headers['dlq-reason']))) {
        const count = dead.messages.filter((m) => m.headers['dlq-reason'] === reason).length;
        expect(inspected).to.match(new RegExp(`\\n\\s+${count}  ${reason}\\n`));
      }
    } finally {
      await dead.stop();
    }

    // The selection: the Confluent-framed events of this project, unframed.
    const args = ['replay', '--reason', 'invalid-json', '--project', tenant.projectId, '--strip-confluent-prefix', '--rate', '500'];
    const group = replayGroup('mixed-' + key);
    const first = runDlq(s, [...args, '--run', 'mixed-' + key]);
    const events = await topicReader([s.topics.events]);
    try {
      // Killed once some sends are committed: a reader of committed data sees them.
      await events.waitFor('the first committed replays', (m) => m.key === key && m.headers['dlq-replay-count'] === '1', 500, 120_000);
      first.child.kill('SIGKILL');
      expect((await first.exited).code).to.equal(null);
    } finally {
      await events.stop();
    }
    const progress = [...(await committedOffsets(s.kafka, group, s.topics.deadLetter)).values()].reduce((n, o) => n + (o > 0n ? o : 0n), 0n);
    const ends = [...(await topicEnds(s.kafka, s.topics.deadLetter)).values()].reduce((n, o) => n + o, 0n);
    expect(progress < ends, 'the first run was killed before its end').to.equal(true);
    expect(progress > 0n, 'the first run committed some of its work').to.equal(true);

    // The second run fences the killed one's open transaction and sends only what is left.
    const summary = await dlq(s, [...args, '--run', 'mixed-' + key]);
    const sentAfter = Number(/, sent (\d+),/.exec(summary)?.[1]);
    expect(sentAfter).to.be.above(0).and.below(PREFIXED);
    expect(summary).to.include('skipped by the loop guard 0');

    // Nothing twice for a reader of committed data, nothing unselected, each selected letter once.
    const through = await eventsThroughSentinel(s, key);
    const replayed = replayedOf(through.messages, key);
    expect(replayed).to.have.length(PREFIXED);
    expect(new Set(replayed.map(idOf))).to.deep.equal(new Set(valid.map((e) => e.id)));
    for (const m of replayed) expect(Object.keys(m.headers).filter((h) => h.startsWith('dlq-'))).to.deep.equal(['dlq-replay-count']);

    await waitFor('the replayed events in the feed', async () => ((await feedIds(s, tenant)).length >= PREFIXED ? true : undefined), 120_000, 500);
    await ingestedThrough(s, through.sentinel);
    const feed = await feedIds(s, tenant);
    expect(feed).to.have.length(PREFIXED);
    expect(new Set(feed)).to.deep.equal(new Set(valid.map((e) => e.id)));

    // A third run of the same selection finds nothing left of it.
    expect(await dlq(s, [...args, '--run', 'mixed-' + key])).to.include('selected 0, sent 0');
  });

  it('a valid event replayed twice, by two runs, shows once in the feed', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const key = uuid();
    const events: CanonicalEvent[] = eventSeries(3, { org_id: tenant.orgId, project_id: tenant.projectId }, Date.parse('2026-04-05T00:00:00Z'));
    await deadLetter(s, key, events.map((e) => ({ value: confluentFramed(e) })));
    const select = ['replay', '--project', tenant.projectId, '--strip-confluent-prefix'];
    expect(await dlq(s, [...select, '--run', `once-${key}`])).to.include('sent 3,');
    expect(await dlq(s, [...select, '--run', `twice-${key}`])).to.include('sent 3,');
    const through = await eventsThroughSentinel(s, key);
    expect(replayedOf(through.messages, key)).to.have.length(6);
    await ingestedThrough(s, through.sentinel);
    const feed = await feedIds(s, tenant);
    expect(feed.sort()).to.deep.equal(events.map((e) => e.id).sort());
  });

  it('the loop guard stops a letter that keeps coming back, and counts it', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const key = uuid();
    // Refused whenever it comes back: its id is no uuid, so nothing a replay does fixes it.
    const broken = eventSeries(4, { org_id: tenant.orgId, project_id: tenant.projectId }, Date.parse('2026-04-06T00:00:00Z')).map((e) => ({ value: JSON.stringify({ ...e, id: 'not-a-uuid' }) }));
    await deadLetter(s, key, broken);
    // One run, resumed each time: each pass reads only the letters that came back since.
    const args = ['replay', '--project', tenant.projectId, '--max-replays', '2', '--run', `loop-${key}`];
    const reader = await topicReader([s.topics.deadLetter]);
    try {
      for (const count of [1, 2]) {
        expect(await dlq(s, args)).to.include('sent 4, skipped by the loop guard 0');
        await reader.waitFor(`the letters back with dlq-replay-count ${count}`, (m) => m.key === key && m.headers['dlq-replay-count'] === String(count), 4, 60_000);
      }
      expect(await dlq(s, args)).to.include('read 4, selected 4, sent 0, skipped by the loop guard 4 (dlq-replay-count >= 2)');
    } finally {
      await reader.stop();
    }
    const onEvents = replayedOf((await eventsThroughSentinel(s, key)).messages, key);
    expect(onEvents.map((m) => m.headers['dlq-replay-count']).sort()).to.deep.equal(['1', '1', '1', '1', '2', '2', '2', '2']);
  });
});
