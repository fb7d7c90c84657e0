/**
 * The bench's own SQL to the run's ClickHouse server, over its HTTP interface, and the waits
 * a scenario needs before it measures: merges settled, and no query of its own still running.
 */
import { waitFor } from '../../test/support/wait-for.js';

/** `sql` in `database`, with `{name:Type}` parameters; the answer's text, or an error naming the server's. */
export async function runSql(url: string, database: string, sql: string, params: Readonly<Record<string, string>> = {}): Promise<string> {
  const target = new URL(url);
  target.searchParams.set('database', database);
  for (const [name, value] of Object.entries(params)) target.searchParams.set(`param_${name}`, value);
  const res = await fetch(target, { method: 'POST', body: sql });
  const text = await res.text();
  if (!res.ok) throw new Error(`ClickHouse answered ${res.status}: ${text.slice(0, 500)}`);
  return text;
}

/**
 * Waits until no merge of `tables` runs for five polls in a row, two seconds apart: the parts
 * as a deployment's background merges leave them, with no OPTIMIZE. Gives the active parts of
 * `events` then.
 */
export async function mergesSettled(url: string, database: string, tables: readonly string[]): Promise<number> {
  const list = tables.map((t) => `'${t}'`).join(', ');
  let quiet = 0;
  await waitFor(
    `merges of ${tables.join(', ')} to settle`,
    async () => {
      const running = Number((await runSql(url, database, `SELECT count() FROM system.merges WHERE database = currentDatabase() AND table IN (${list})`)).trim());
      quiet = running === 0 ? quiet + 1 : 0;
      return quiet >= 5 ? true : undefined;
    },
    2 * 3600_000,
    2000,
  );
  return Number((await runSql(url, database, `SELECT count() FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active`)).trim());
}

/**
 * Waits until the server runs no query in `database`, twice in a row (the local server's own
 * clickhouse-local query, which keeps it up, runs for as long as it does): the last load's
 * reads still in flight would otherwise count in the next one's figures.
 */
export async function serverQuiet(url: string, database: string): Promise<void> {
  let idle = 0;
  await waitFor(
    'the server to finish the last load',
    async () => {
      const running = Number((await runSql(url, database, 'SELECT count() FROM system.processes WHERE current_database = currentDatabase() AND query_id != queryID()')).trim());
      idle = running === 0 ? idle + 1 : 0;
      return idle >= 2 ? true : undefined;
    },
    300_000,
    200,
  );
}

/**
 * Rows read and SELECT queries since the server started (system.events), whoever sent them:
 * read before and after pages asked one at a time, what each page cost the server. Reading
 * them is itself a SELECT, and reads a row per event name.
 */
export async function serverCounters(url: string): Promise<{ rows: number; queries: number }> {
  const text = await runSql(url, 'system', "SELECT event, value FROM system.events WHERE event IN ('SelectedRows', 'SelectQuery') FORMAT JSONEachRow");
  const values = Object.fromEntries(
    text
      .trim()
      .split('\n')
      .map((line) => {
        const { event, value } = JSON.parse(line) as { event: string; value: string };
        return [event, Number(value)];
      }),
  );
  return { rows: values['SelectedRows'] ?? 0, queries: values['SelectQuery'] ?? 0 };
}
