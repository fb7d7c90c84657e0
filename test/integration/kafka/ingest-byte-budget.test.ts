import { expect } from 'chai';
import { bufferedBytes } from '../../../src/ingest/commit-pipeline.js';
import { createGatewayMetrics } from '../../../src/metrics/gateway-metrics.js';
import { capturedLogger } from '../../support/captured-logger.js';
import { canonicalEvent } from '../../support/factories.js';
import { committedToEnd } from '../../support/kafka-topics.js';
import { waitFor } from '../../support/wait-for.js';
import { describeOnEachStore } from './kafka-suite.js';
import { ownConsumerHooks, ownIngestConsumer, ownTopic, sendTo } from './own-ingest-consumer.js';

const PARTITIONS = 3;
const PER_PARTITION = 1_000;

describeOnEachStore('the ingest consumer under a small byte budget (INGEST_MAX_BUFFERED_BYTES)', function (suite) {
  this.timeout(120_000);
  const { transport, started } = ownConsumerHooks(suite);

  it('drains a backlog far larger than its budget: every event stored once, every partition committed to its end', async () => {
    const s = suite();
    const tenant = s.gateway.tenant();
    const own = await ownTopic(s, 'byte-budget', PARTITIONS);
    const sent = new Set<string>();
    // The backlog is on the topic before the consumer starts, as after an outage.
    for (let partition = 0; partition < PARTITIONS; partition += 1) {
      const events = Array.from({ length: PER_PARTITION }, () => canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId }));
      for (const e of events) sent.add(e.id);
      await sendTo(s.kafka, own.topic, partition, events);
    }
    // Room for about a hundred events, where one partition's fetch brings ten times that:
    // batches wait for room one after another, and one larger than the budget goes alone.
    const budget = bufferedBytes({ events: 100, bytes: 100 * 400 });
    const log = capturedLogger('info');
    await started(ownIngestConsumer(s, own, transport(), createGatewayMetrics(), log.logger, { maxBufferedBytes: budget })).start();

    await waitFor('every partition committed to its end', () => committedToEnd(s.kafka, own.groupId, own.topic), 90_000, 100);
    const [row] = await transport().query<{ ids: string }>('SELECT uniqExact(id) AS ids FROM events WHERE org_id = {org:UUID} AND project_id = {project:UUID}', {
      org: tenant.orgId,
      project: tenant.projectId,
    });
    expect(Number(row?.ids)).to.equal(sent.size);
    expect(log.lines.filter((line) => line.msg === 'dead-lettered events')).to.deep.equal([]);
  });
});
