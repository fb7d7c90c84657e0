import { expect } from 'chai';
import { canonicalEvent, uuid } from '../../support/factories.js';
import { request } from '../../support/http-client.js';
import { parseMetrics, samplesOf, type Sample } from '../../support/metrics-text.js';
import { waitFor } from '../../support/wait-for.js';
import { feedSettlesAt } from './feed-helpers.js';
import { describeOnEachStore } from './kafka-suite.js';

describeOnEachStore('Prometheus metrics of Kafka and ingestion', function (suite) {
  this.timeout(60_000);

  const scrape = async (): Promise<Sample[]> => parseMetrics((await request('GET', new URL('/metrics', suite().gateway.baseUrl).toString())).text);
  const total = (samples: Sample[], name: string, labels: Record<string, string> = {}) => samplesOf(samples, name, labels).reduce((n, s) => n + s.value, 0);

  it('times sends of commands per topic', async () => {
    const { gateway, topics } = suite();
    const tenant = gateway.tenant();
    const sends = async () => total(await scrape(), 'kafka_produce_duration_seconds_count', { topic: topics.commands.enrollmentCommands });
    const before = await sends();
    const res = await gateway.call('POST', `/projects/${tenant.projectId}/fleets/${uuid()}/devices/${uuid()}/enroll`, { headers: await tenant.headers(), body: {} });
    expect(res.status).to.equal(202);
    expect(await sends()).to.be.at.least(before + 1);
    expect(total(await scrape(), 'kafka_produce_errors_total', { topic: topics.commands.enrollmentCommands })).to.equal(0);
  });

  it('counts dead letters by reason, and reports batch size, insert time and lag per partition', async () => {
    const { gateway, kafka, topics } = suite();
    const tenant = gateway.tenant();
    const deadByJson = async () => total(await scrape(), 'ingest_dead_lettered_total', { reason: 'invalid-json' });
    const before = await deadByJson();
    const producer = kafka.producer();
    await producer.connect();
    const event = canonicalEvent({ org_id: tenant.orgId, project_id: tenant.projectId });
    await producer.send({ topic: topics.events, acks: -1, messages: [{ key: tenant.projectId, value: 'not json' }, { key: tenant.projectId, value: JSON.stringify(event) }] });
    await producer.disconnect();
    await feedSettlesAt(gateway, tenant, 1);
    await waitFor('the dead letter counted', async () => ((await deadByJson()) === before + 1 ? true : undefined));

    const samples = await scrape();
    expect(total(samples, 'ingest_batch_size_count')).to.be.above(0);
    expect(total(samples, 'ingest_insert_duration_seconds_count')).to.be.above(0);
    const lag = samplesOf(samples, 'kafka_consumer_lag', { topic: topics.events });
    expect(lag.length, 'a lag series per partition of the events topic that was consumed').to.be.above(0);
    for (const s of lag) expect(s.value).to.be.at.least(0);
  });
});
