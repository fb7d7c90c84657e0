import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
import { parse as parseYaml } from 'yaml';

/**
 * Reads the queries out of the alerting rules and the Grafana dashboard in ops/, and the
 * metrics and labels each one selects. The check that every one of them is really
 * exported (test/integration/stack/prometheus-scrape.test.ts) and the promtool syntax
 * check of the dashboard (scripts/check-ops.ts) both start from here, so neither keeps
 * a list of its own.
 */

export const repoRoot = resolve(import.meta.dirname, '..');
export const OPS_FILES = {
  alerts: join(repoRoot, 'ops', 'prometheus', 'core-gateway-alerts.yml'),
  alertTests: join(repoRoot, 'ops', 'prometheus', 'core-gateway-alerts.test.yml'),
  dashboard: join(repoRoot, 'ops', 'grafana', 'core-gateway-dashboard.json'),
} as const;

/** One PromQL query and where it was found, for messages. */
export interface OpsQuery {
  readonly source: string;
  readonly expr: string;
}

/** A metric one query selects, with the label names the query matches on or groups by. */
export interface MetricUse {
  readonly metric: string;
  readonly labels: readonly string[];
}

type SyntaxNode = ReturnType<typeof parser.parse>['topNode'];

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const records = (value: unknown): Record<string, unknown>[] => (Array.isArray(value) ? value.filter(isRecord) : []);

/** The alerting rules of a Prometheus rule file, by name. */
export function alertRules(yamlText: string): { readonly alert: string; readonly expr: string }[] {
  const doc: unknown = parseYaml(yamlText);
  if (!isRecord(doc)) throw new Error('a rule file is a mapping with `groups`');
  const rules: { alert: string; expr: string }[] = [];
  for (const group of records(doc.groups)) {
    for (const rule of records(group.rules)) {
      if (typeof rule.alert !== 'string' || typeof rule.expr !== 'string') throw new Error(`a rule without alert or expr in group ${String(group.name)}`);
      rules.push({ alert: rule.alert, expr: rule.expr });
    }
  }
  return rules;
}

export function alertQueries(yamlText: string): OpsQuery[] {
  return alertRules(yamlText).map((r) => ({ source: `alert ${r.alert}`, expr: r.expr }));
}

/** For each alert of the rule file, whether its promtool tests have a case where it fires and one where it stays quiet. */
export function alertTestCoverage(rulesYaml: string, testsYaml: string): Map<string, { fires: boolean; quiet: boolean }> {
  const coverage = new Map(alertRules(rulesYaml).map((r) => [r.alert, { fires: false, quiet: false }]));
  const doc: unknown = parseYaml(testsYaml);
  if (!isRecord(doc)) throw new Error('a rule test file is a mapping with `tests`');
  for (const test of records(doc.tests)) {
    for (const check of records(test.alert_rule_test)) {
      const entry = typeof check.alertname === 'string' ? coverage.get(check.alertname) : undefined;
      if (entry === undefined) continue;
      const expected = Array.isArray(check.exp_alerts) ? check.exp_alerts.length : 0;
      if (expected > 0) entry.fires = true;
      else entry.quiet = true;
    }
  }
  return coverage;
}

// Grafana fills these in before the query reaches Prometheus. A duration variable becomes a
// duration; any other variable stands inside a label matcher's string, where any regex fits.
const GRAFANA_DURATIONS = /\$(?:\{__(?:rate_interval|interval|range)\}|__(?:rate_interval|interval|range)\b)/g;
const GRAFANA_VARIABLES = /\$\{\w+(?::\w+)?\}|\$\w+|\[\[\w+\]\]/g;

/** A query of the dashboard as Prometheus would receive it, with one plausible value per Grafana variable. */
export function withGrafanaVariables(expr: string): string {
  return expr.replace(GRAFANA_DURATIONS, '5m').replace(GRAFANA_VARIABLES, '.*');
}

// label_values(selector, label) of a template variable: the selector is PromQL, the label one it must carry.
const LABEL_VALUES = /^\s*label_values\(\s*(.+?)\s*,\s*(\w+)\s*\)\s*$/s;

/** Every PromQL query of a Grafana dashboard: panel targets (rows' nested panels too) and query variables. */
export function dashboardQueries(jsonText: string): OpsQuery[] {
  const doc: unknown = JSON.parse(jsonText);
  if (!isRecord(doc)) throw new Error('a dashboard is a JSON object');
  const queries: OpsQuery[] = [];
  const visit = (panels: unknown) => {
    for (const panel of records(panels)) {
      for (const target of records(panel.targets)) {
        if (typeof target.expr === 'string') queries.push({ source: `panel "${String(panel.title)}" ${String(target.refId)}`, expr: withGrafanaVariables(target.expr) });
      }
      visit(panel.panels);
    }
  };
  visit(doc.panels);
  const templating = isRecord(doc.templating) ? doc.templating.list : undefined;
  for (const variable of records(templating)) {
    if (variable.type !== 'query') continue;
    const query = isRecord(variable.query) ? variable.query.query : variable.query;
    if (typeof query !== 'string') throw new Error(`variable ${String(variable.name)} has no query`);
    const m = LABEL_VALUES.exec(query);
    if (m === null) throw new Error(`variable ${String(variable.name)}: only label_values(selector, label) is understood, got ${query}`);
    queries.push({ source: `variable ${String(variable.name)}`, expr: `group by (${m[2]!}) (${withGrafanaVariables(m[1]!)})` });
  }
  return queries;
}

const childrenOf = (node: SyntaxNode): SyntaxNode[] => {
  const list: SyntaxNode[] = [];
  for (let c = node.firstChild; c !== null; c = c.nextSibling) list.push(c);
  return list;
};

/**
 * The metrics an expression selects and, for each, the labels it matches on or groups by
 * (a `by` of an aggregation counts for every selector inside it). An expression that does
 * not parse, or a selector without a metric name, is an error: either would hide a metric.
 */
export function metricUses(expr: string): MetricUse[] {
  const tree = parser.parse(expr);
  const uses: MetricUse[] = [];
  const text = (node: SyntaxNode) => expr.slice(node.from, node.to);
  const walk = (node: SyntaxNode, grouping: readonly string[]) => {
    if (node.type.isError) throw new Error(`does not parse as PromQL at ${node.from}: ${expr}`);
    if (node.name === 'VectorSelector') {
      const kids = childrenOf(node);
      const name = kids.find((k) => k.name === 'Identifier');
      if (name === undefined) throw new Error(`a selector without a metric name: ${text(node)}`);
      const labels = new Set(grouping);
      const matchers = kids.find((k) => k.name === 'LabelMatchers');
      for (const matcher of matchers === undefined ? [] : childrenOf(matchers)) {
        if (matcher.type.isError) throw new Error(`does not parse as PromQL: ${text(matcher)}`);
        const label = childrenOf(matcher).find((k) => k.name === 'LabelName');
        if (label === undefined) throw new Error(`a label matcher this reader does not know: ${text(matcher)}`);
        labels.add(text(label));
      }
      uses.push({ metric: text(name), labels: [...labels].sort() });
      return;
    }
    let inner = grouping;
    if (node.name === 'AggregateExpr') {
      const modifier = childrenOf(node).find((k) => k.name === 'AggregateModifier');
      if (modifier !== undefined && childrenOf(modifier).some((k) => k.name === 'By')) {
        const groupingLabels = childrenOf(modifier).find((k) => k.name === 'GroupingLabels');
        inner = [...grouping, ...(groupingLabels === undefined ? [] : childrenOf(groupingLabels).filter((k) => k.name === 'LabelName').map(text))];
      }
    }
    for (const child of childrenOf(node)) walk(child, inner);
  };
  walk(tree.topNode, []);
  if (uses.length === 0) throw new Error(`selects no metric: ${expr}`);
  return uses;
}

/** Every metric the queries select, with the union of the labels they need on it. */
export function metricsUsed(queries: readonly OpsQuery[]): Map<string, { labels: Set<string>; sources: Set<string> }> {
  const used = new Map<string, { labels: Set<string>; sources: Set<string> }>();
  for (const query of queries) {
    let uses: MetricUse[];
    try {
      uses = metricUses(query.expr);
    } catch (error) {
      throw new Error(`${query.source}: ${(error as Error).message}`, { cause: error });
    }
    for (const use of uses) {
      const entry = used.get(use.metric) ?? { labels: new Set<string>(), sources: new Set<string>() };
      for (const label of use.labels) entry.labels.add(label);
      entry.sources.add(query.source);
      used.set(use.metric, entry);
    }
  }
  return used;
}

/** The queries of both ops files in this repository. */
export function opsQueries(): { readonly alerts: OpsQuery[]; readonly dashboard: OpsQuery[] } {
  return {
    alerts: alertQueries(readFileSync(OPS_FILES.alerts, 'utf8')),
    dashboard: dashboardQueries(readFileSync(OPS_FILES.dashboard, 'utf8')),
  };
}
