import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { alertTestCoverage, metricsUsed, OPS_FILES, opsQueries, repoRoot } from './ops-queries.js';

/**
 * `npm run ops:check`: the alerting rules and the dashboard in ops/, checked by
 * Prometheus' own promtool. The rules must load (`check rules`) and pass their unit
 * tests (`test rules`), each alert with a case that fires and one that stays quiet.
 * Grafana has no offline checker here, so every dashboard query, its variables filled
 * in, is handed to `promtool check rules` as a recording rule: Prometheus' parser then
 * judges each one. promtool comes from Debian's prometheus package, installed when missing.
 */

const run = promisify(execFile);

async function promtool(args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run('promtool', args, { cwd: repoRoot, maxBuffer: 10 * 1024 * 1024 });
    return `${stdout}${stderr}`;
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    throw new Error(`promtool ${args.join(' ')} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
  }
}

async function main(): Promise<void> {
  // Its progress and its reason for failing go straight to the terminal.
  const ensured = spawnSync('bash', ['-c', `source ${JSON.stringify(join(repoRoot, 'scripts', 'prometheus-lib.sh'))} && ensure_prometheus`], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (ensured.status !== 0) throw new Error('promtool is not available (see above)');

  process.stdout.write(await promtool(['check', 'rules', OPS_FILES.alerts]));
  process.stdout.write(await promtool(['test', 'rules', OPS_FILES.alertTests]));

  const coverage = alertTestCoverage(readFileSync(OPS_FILES.alerts, 'utf8'), readFileSync(OPS_FILES.alertTests, 'utf8'));
  const untested = [...coverage].filter(([, c]) => !c.fires || !c.quiet).map(([alert, c]) => `${alert} (${c.fires ? '' : 'no firing case'}${!c.fires && !c.quiet ? ', ' : ''}${c.quiet ? '' : 'no quiet case'})`);
  if (untested.length > 0) throw new Error(`alerts without a firing and a quiet unit test: ${untested.join('; ')}`);

  const { alerts, dashboard } = opsQueries();
  const dir = mkdtempSync(join(tmpdir(), 'core-gateway-ops-'));
  try {
    const file = join(dir, 'dashboard-queries.yml');
    const rules = dashboard.map((q, i) => ({ record: `dashboard:query_${i}`, expr: q.expr }));
    writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules }] }));
    try {
      await promtool(['check', 'rules', file]);
    } catch (error) {
      const listing = dashboard.map((q, i) => `  dashboard:query_${i}  ${q.source}`).join('\n');
      throw new Error(`${(error as Error).message}\nwhich query is which:\n${listing}`, { cause: error });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const metrics = metricsUsed([...alerts, ...dashboard]);
  console.log(`ops:check: ${coverage.size} alerts, each with a firing and a quiet test; ${dashboard.length} dashboard queries valid; ${metrics.size} metrics used`);
}

main().catch((error: unknown) => {
  console.error(`ops:check: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
