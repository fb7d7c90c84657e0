import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { API_PREFIX } from '../../../src/http/app.js';
import { metricsUsed, OPS_FILES, opsQueries } from '../../../scripts/ops-queries.js';
import { request } from '../../support/http-client.js';
import { freePort, runScript, stateValue } from '../../support/processes.js';
import { createStack, type Stack } from '../../support/stack.js';
import { waitFor } from '../../support/wait-for.js';
import { enroll, firstPage, newTenant } from './stack-helpers.js';

// As in production-shape.test.ts: the hook outlasts the stack scripts' own bounded waits.
const STACK_START_BUDGET_MS = 300_000;
// The job names the CoreGatewayDown rule and the dashboard's job variable select.
const GATEWAY_JOB = 'core-gateway';
const CONSUMER_JOB = 'core-gateway-consumer';
const OUR_JOBS = `${GATEWAY_JOB}|${CONSUMER_JOB}`;

interface PrometheusAnswer<T> {
  readonly status: string;
  readonly data: T;
}
interface Target {
  readonly labels: Readonly<Record<string, string>>;
  readonly health: string;
  readonly lastError: string;
}
interface RuleGroup {
  readonly name: string;
  readonly file: string;
  readonly rules: readonly { readonly name: string; readonly type: string; readonly health: string; readonly lastError?: string }[];
}

describe('Prometheus scraping the production shape: what the alerts and the dashboard use is really exported', function () {
  let stack: Stack | undefined;
  let prometheusUrl: string | undefined;
  const dir = mkdtempSync(join(tmpdir(), 'core-gateway-prometheus-'));
  const stateDir = join(dir, 'state');

  const api = async <T>(path: string): Promise<T> => {
    if (prometheusUrl === undefined) throw new Error('Prometheus did not start');
    const res = await request<PrometheusAnswer<T>>('GET', `${prometheusUrl}${path}`);
    if (res.status !== 200 || res.body.status !== 'success') throw new Error(`Prometheus answered ${res.status} to ${path}: ${res.text}`);
    return res.body.data;
  };

  before(async function () {
    this.timeout(STACK_START_BUDGET_MS);
    // A low per-organization limit, so that one tenant's burst yields the 429s the rate-limit panel counts.
    stack = await createStack({ RATE_LIMIT_PER_ORG: '5', RATE_LIMIT_BURST: '5' });
    await stack.start();
    const consumerUrl = stateValue(join(stack.dir, 'stack.env'), 'CONSUMER_URL');
    if (consumerUrl === undefined) throw new Error(`stack-start.sh wrote no CONSUMER_URL into ${stack.dir}/stack.env`);
    const hostOf = (url: string) => new URL(url).host;
    const config = join(dir, 'prometheus.yml');
    writeFileSync(
      config,
      stringify({
        // Scraped and evaluated every second, so the test waits seconds, not the minutes of a production interval.
        global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
        rule_files: [OPS_FILES.alerts],
        scrape_configs: [
          { job_name: GATEWAY_JOB, static_configs: [{ targets: stack.gatewayUrls.map(hostOf) }] },
          { job_name: CONSUMER_JOB, static_configs: [{ targets: [hostOf(consumerUrl)] }] },
        ],
      }),
    );
    const port = await freePort();
    await runScript('prometheus-start.sh', { PROMETHEUS_CONFIG: config, PROMETHEUS_STATE_DIR: stateDir, PROMETHEUS_PORT: String(port) });
    prometheusUrl = `http://127.0.0.1:${port}`;
  });

  after(async function () {
    this.timeout(120_000);
    try {
      await runScript('prometheus-stop.sh', { PROMETHEUS_STATE_DIR: stateDir });
    } finally {
      await stack?.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('scrapes both gateways and the consumer', async () => {
    const targets = await waitFor('three healthy targets', async () => {
      const { activeTargets } = await api<{ activeTargets: Target[] }>('/api/v1/targets?state=active');
      return activeTargets.length === 3 && activeTargets.every((t) => t.health === 'up') ? activeTargets : undefined;
    });
    expect(targets.map((t) => t.labels.job).sort()).to.deep.equal([GATEWAY_JOB, GATEWAY_JOB, CONSUMER_JOB].sort());
  });

  it('loads every alerting rule of ops/ and evaluates each without error', async () => {
    const expected = opsQueries().alerts.map((q) => q.source.replace(/^alert /, '')).sort();
    const rules = await waitFor('every rule evaluated', async () => {
      const { groups } = await api<{ groups: RuleGroup[] }>('/api/v1/rules?type=alert');
      const loaded = groups.filter((g) => g.file === OPS_FILES.alerts).flatMap((g) => g.rules);
      return loaded.length === expected.length && loaded.every((r) => r.health !== 'unknown') ? loaded : undefined;
    });
    expect(rules.map((r) => r.name).sort()).to.deep.equal(expected);
    for (const rule of rules) expect({ name: rule.name, health: rule.health, lastError: rule.lastError ?? '' }).to.deep.equal({ name: rule.name, health: 'ok', lastError: '' });
  });

  it('holds series from our targets for every metric the rules and the dashboard use, with every label they match on or group by', async function () {
    this.timeout(120_000);
    const running = stack;
    if (running === undefined) throw new Error('the stack did not start');
    const [gatewayA, gatewayB] = running.gatewayUrls;

    // Traffic that makes the metrics that only appear with use appear: a command sent and
    // ingested (send times, consumer lag), a feed read, and a burst over the rate limit.
    const tenant = await newTenant(running.secret);
    const answer = await enroll(gatewayA, tenant);
    expect(answer.status, answer.text).to.equal(202);
    await waitFor('the enrollment in the feed of gateway B', async () =>
      (await firstPage(gatewayB, tenant)).find((e) => e.correlation_id === answer.body.data.enrollment_id),
    );
    const burst = await newTenant(running.secret);
    // Sent together: one at a time, a page slower than the refill (an empty project's page reads
    // every window back) would never find the bucket empty.
    await waitFor('a 429 from the per-organization limit', async () => {
      const answers = await Promise.all(
        Array.from({ length: 10 }, () => request('GET', `${gatewayA}${API_PREFIX}/projects/${burst.projectId}/events`, { headers: burst.headers })),
      );
      return answers.some((res) => res.status === 429) ? true : undefined;
    });

    const { alerts, dashboard } = opsQueries();
    const used = metricsUsed([...alerts, ...dashboard]);
    // What is wrong with each metric, as it stands in Prometheus now; empty when nothing is.
    const problems = async (): Promise<string[]> => {
      const found: string[] = [];
      for (const [metric, { labels, sources }] of used) {
        const match = encodeURIComponent(`${metric}{job=~"${OUR_JOBS}"}`);
        const series = await api<Record<string, string>[]>(`/api/v1/series?match[]=${match}`);
        const where = [...sources].join(', ');
        if (series.length === 0) {
          found.push(`${metric}: no series (used by ${where})`);
          continue;
        }
        const carried = new Set(series.flatMap((s) => Object.keys(s)));
        const absent = [...labels].filter((l) => !carried.has(l));
        if (absent.length > 0) found.push(`${metric}: no series carries ${absent.join(', ')} (used by ${where})`);
      }
      return found;
    };
    let remaining: string[] = [];
    await waitFor(
      'every metric scraped',
      async () => {
        remaining = await problems();
        return remaining.length === 0 ? true : undefined;
      },
      60_000,
      500,
    ).catch(() => undefined);
    expect(remaining, 'metrics the rules or the dashboard use that Prometheus did not scrape from the stack').to.deep.equal([]);

    // The same question about a name nobody exports gets no series: an empty answer is not taken for a yes.
    const [anyMetric] = used.keys();
    const none = await api<unknown[]>(`/api/v1/series?match[]=${encodeURIComponent(`${anyMetric!}_not_exported{job=~"${OUR_JOBS}"}`)}`);
    expect(none).to.deep.equal([]);
  });
});
