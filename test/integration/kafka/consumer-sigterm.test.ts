import { expect } from 'chai';
import type { CanonicalEvent } from '../../../src/generated/schema-types.js';
import { uuid } from '../../support/factories.js';
import { startGatewayProcess, type GatewayProcess } from '../../support/gateway-process.js';
import { committedOffsets, committedToEnd, produceContinuously, readToEnd } from '../../support/kafka-topics.js';
import { storesUnderTest } from '../../support/stores.js';
import { waitFor } from '../../support/wait-for.js';
import { consumerProcessSetup, storedCounts, storedIds } from './ingest-group.js';
import { sharedKafka } from './kafka-suite.js';

// Production runs at 200 events/s, so a batch never fills to this size: each waits out the
// whole linger, and at any moment one is fetched but neither stored nor committed.
const BATCH_SIZE = 5_000;
const BATCH_WAIT_MS = 2_000;

/**
 * Only on the ClickHouse server store, declared so rather than skipped: the assertions read
 * the store with SQL while the consumer is down, and a chDB store is a data directory that
 * only the process holding it can open (this test process already holds the suite's own
 * chDB directory). The stop path under test, the ingest consumer's, is the same on both.
 */
if (storesUnderTest().includes('clickhouse-server')) {
  describe('SIGTERM to an ingest consumer mid-batch [clickhouse-server]', function () {
    this.timeout(120_000);
    const processes: GatewayProcess[] = [];
    afterEach(async () => {
      await Promise.all(processes.splice(0).map((p) => p.dispose()));
    });

    it('finishes the batch in flight, exits 0, commits only what it stored, and a restart loses nothing', async () => {
      const { infra, kafka } = sharedKafka();
      const { env, topic, groupId, clickhouseUrl, database } = consumerProcessSetup(infra, 'sigterm', {
        KAFKA_TOPIC_PARTITIONS: '3',
        KAFKA_SESSION_TIMEOUT_MS: '6000',
        INGEST_BATCH_SIZE: String(BATCH_SIZE),
        INGEST_BATCH_WAIT_MS: String(BATCH_WAIT_MS),
      });

      const consumer = await startGatewayProcess(env);
      processes.push(consumer);
      const orgId = uuid();
      const producer = kafka.producer();
      await producer.connect();
      const events = produceContinuously(producer, topic, { org_id: orgId, project_id: uuid() });
      let atSignal: Map<number, bigint>;
      let atExit: Map<number, bigint>;
      let storedAtExit: Set<string>;
      try {
        await waitFor('a first batch stored and committed', async () => {
          events.check();
          const committed = await committedOffsets(kafka, groupId, topic);
          return [...committed.values()].some((offset) => offset > 0n) ? true : undefined;
        }, 30_000, 250);
        // A batch is lingering now: events keep arriving, and a batch this size never fills.
        atSignal = await committedOffsets(kafka, groupId, topic);
        consumer.signal('SIGTERM');
        const exit = await consumer.exited;
        // Its own deadline (SHUTDOWN_GRACE_MS plus the flush bound) exits 1: 0 means the batch finished in time.
        expect(exit, consumer.output().slice(-3000)).to.deep.equal({ code: 0, signal: null });
        expect(consumer.logLines().map((line) => line.msg)).to.include('stopped');
        // Both read while no consumer runs, so they describe what the stopped one left behind.
        atExit = await committedOffsets(kafka, groupId, topic);
        storedAtExit = await storedIds(clickhouseUrl, database, orgId);

        // Still producing: the restart resumes from the committed offsets into a live stream.
        const restarted = await startGatewayProcess(env);
        processes.push(restarted);
        await waitFor('the restarted consumer committing past the SIGTERM', async () => {
          events.check();
          const now = await committedOffsets(kafka, groupId, topic);
          return [...now].every(([p, offset]) => offset > (atExit.get(p) ?? -1n)) && now.size > 0 ? true : undefined;
        }, 30_000, 250);
      } finally {
        await events.stop().finally(() => producer.disconnect());
      }

      // The batch in flight at the signal was stored and committed by the shutdown, not dropped for a redelivery.
      const advanced = [...atExit].filter(([p, offset]) => offset > (atSignal.get(p) ?? -1n));
      // eslint-disable-next-line @typescript-eslint/no-unused-expressions -- chai's .empty asserts when read.
      expect(advanced, `offsets at the signal ${[...atSignal].join(' ')}, at exit ${[...atExit].join(' ')}; its log: ${consumer.output().slice(-4000)}`).to.not.be.empty;

      // Committed offsets never come again, so an event below them that the stopped consumer had
      // not stored would be lost for good: compare against the store as it was before the restart.
      const onTopic = await readToEnd(kafka, [topic]);
      const coveredAtExit = onTopic.filter((m) => BigInt(m.offset) < (atExit.get(m.partition) ?? 0n));
      const committedNotStored = coveredAtExit.map((m) => (JSON.parse(m.value!) as CanonicalEvent).id).filter((id) => !storedAtExit.has(id));
      expect(coveredAtExit.length, 'events committed at exit').to.be.above(0);
      expect(committedNotStored, 'committed at exit but not stored').to.deep.equal([]);

      await waitFor('the group committed to the end', () => committedToEnd(kafka, groupId, topic), 30_000, 250);
      const produced = new Set(events.produced);
      expect(produced.size, 'distinct ids produced').to.equal(events.produced.length);
      const final = await storedIds(clickhouseUrl, database, orgId);
      const missing = [...produced].filter((id) => !final.has(id));
      expect(missing, 'produced but not stored').to.deep.equal([]);
      // At least once: a batch stored but not committed before the exit comes again after the
      // restart, which may add raw rows until ReplacingMergeTree merges them. So raw rows may
      // exceed the produced count; distinct ids and rows folded by FINAL must equal it.
      const counts = await storedCounts(clickhouseUrl, database, orgId);
      expect(counts.distinctIds, 'distinct ids stored').to.equal(produced.size);
      expect(counts.foldedRows, 'rows stored, copies folded').to.equal(produced.size);
      expect(counts.rawRows, 'raw rows stored').to.be.at.least(produced.size);
    });
  });
}
