import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import {
  alertQueries,
  alertTestCoverage,
  dashboardQueries,
  metricsUsed,
  metricUses,
  OPS_FILES,
  withGrafanaVariables,
} from '../../../scripts/ops-queries.js';

describe('reading the metrics out of the ops queries', () => {
  it('finds each selected metric with the labels it is matched on and grouped by', () => {
    const uses = metricUses(
      'sum by (topic) (rate(kafka_produce_errors_total{topic=~"core.*"}[5m])) / on (topic) histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket{route!="/readyz"}[5m]))) and up == 0',
    );
    expect(uses).to.deep.equal([
      { metric: 'kafka_produce_errors_total', labels: ['topic'] },
      { metric: 'http_request_duration_seconds_bucket', labels: ['le', 'route'] },
      { metric: 'up', labels: [] },
    ]);
  });

  it('groups only by `by` labels; `without` names labels to drop, not ones to expect', () => {
    expect(metricUses('sum without (instance) (process_resident_memory_bytes)')).to.deep.equal([{ metric: 'process_resident_memory_bytes', labels: [] }]);
    expect(metricUses('max(kafka_consumer_lag{job="x"}) by (partition)')).to.deep.equal([{ metric: 'kafka_consumer_lag', labels: ['job', 'partition'] }]);
  });

  it('refuses an expression that does not parse, a selector without a metric name, and one that selects nothing', () => {
    expect(() => metricUses('sum by (topic (rate(x[5m]))')).to.throw(/does not parse/);
    expect(() => metricUses('{__name__=~"kafka_.*"}')).to.throw(/without a metric name/);
    expect(() => metricUses('1 + 1')).to.throw(/selects no metric/);
  });

  it('fills in Grafana variables as Prometheus would receive them', () => {
    expect(withGrafanaVariables('rate(x{job=~"$job", instance=~"${instance}", a="[[a]]"}[$__rate_interval]) + rate(y[${__interval}])')).to.equal(
      'rate(x{job=~".*", instance=~".*", a=".*"}[5m]) + rate(y[5m])',
    );
  });

  it('reads panel targets, rows\' nested panels and label_values variables of a dashboard', () => {
    const dashboard = JSON.stringify({
      panels: [
        { title: 'a', targets: [{ refId: 'A', expr: 'rate(m_total{job=~"$job"}[$__rate_interval])' }] },
        { type: 'row', title: 'collapsed', panels: [{ title: 'b', targets: [{ refId: 'B', expr: 'g' }] }] },
      ],
      templating: { list: [{ name: 'instance', type: 'query', query: { query: 'label_values(up{job=~"$job"}, instance)' } }, { name: 'ds', type: 'datasource' }] },
    });
    const queries = dashboardQueries(dashboard);
    expect(queries.map((q) => q.source)).to.deep.equal(['panel "a" A', 'panel "b" B', 'variable instance']);
    expect([...metricsUsed(queries)].map(([metric, use]) => [metric, [...use.labels]])).to.deep.equal([
      ['m_total', ['job']],
      ['g', []],
      ['up', ['instance', 'job']],
    ]);
  });

  it('refuses a variable query it cannot read, rather than skipping its metric', () => {
    const dashboard = JSON.stringify({ templating: { list: [{ name: 'v', type: 'query', query: 'query_result(up)' }] } });
    expect(() => dashboardQueries(dashboard)).to.throw(/only label_values/);
  });

  it('tells apart alerts tested firing, tested quiet, and not tested', () => {
    const rules = 'groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n      - alert: B\n        expr: up == 1\n';
    const tests = [
      'tests:',
      '  - alert_rule_test:',
      '      - { alertname: A, eval_time: 1m, exp_alerts: [{ exp_labels: {} }] }',
      '      - { alertname: A, eval_time: 2m, exp_alerts: [] }',
      '      - { alertname: B, eval_time: 2m }',
    ].join('\n');
    expect(Object.fromEntries(alertTestCoverage(rules, tests))).to.deep.equal({ A: { fires: true, quiet: true }, B: { fires: false, quiet: true } });
  });
});

describe('the ops files of this repository', () => {
  const rules = readFileSync(OPS_FILES.alerts, 'utf8');

  it('have an alert for each thing an operator must hear about', () => {
    expect(alertQueries(rules).map((q) => q.source)).to.include.members(
      ['IngestLagGrowing', 'PartitionStalled', 'IngestRetentionGap', 'DeadLettersRising', 'ProduceErrors', 'HighErrorRate', 'LatencyOverBudget', 'NotReady', 'Down'].map((n) => `alert CoreGateway${n}`),
    );
  });

  it('test every alert both firing and staying quiet', () => {
    for (const [alert, coverage] of alertTestCoverage(rules, readFileSync(OPS_FILES.alertTests, 'utf8'))) expect(coverage, alert).to.deep.equal({ fires: true, quiet: true });
  });

  it('parse, each query selecting its metrics by name, and every panel query honours the dashboard\'s instance selection', () => {
    const queries = [...alertQueries(rules), ...dashboardQueries(readFileSync(OPS_FILES.dashboard, 'utf8'))];
    expect(() => metricsUsed(queries)).not.to.throw();
    for (const query of queries.filter((q) => q.source.startsWith('panel'))) expect(query.expr, query.source).to.match(/instance=~"\.\*"/);
  });
});
