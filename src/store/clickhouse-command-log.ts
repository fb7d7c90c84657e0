import type { CommandLog } from '../commands/command-log.js';
import type { SqlTransport } from './sql-transport.js';

export function createClickHouseCommandLog(transport: SqlTransport): CommandLog {
  return {
    async append(commands) {
      await transport.insert(
        'command_log',
        commands.map((c) =>
          JSON.stringify({
            topic: c.topic,
            key: c.key,
            command_id: c.commandId,
            value: JSON.stringify(c.value),
            headers: JSON.stringify(c.headers),
          }),
        ),
      );
    },
  };
}
