import type { SqlTransport } from '../../src/store/sql-transport.js';

/** A whole-number setting of `table` as its CREATE statement shows it, undefined where the table does not set it; a table that is not there fails the test. */
export async function tableSetting(sql: SqlTransport, table: string, name: string): Promise<string | undefined> {
  const [row] = await sql.query<{ create_table_query: string }>('SELECT create_table_query FROM system.tables WHERE database = currentDatabase() AND name = {table:String}', { table });
  if (row === undefined) throw new Error(`no table ${table} in the store`);
  return new RegExp(`\\b${name} = (\\d+)`).exec(row.create_table_query)?.[1];
}
