import { createKafkaClient } from '../kafka/kafka-client.js';
import { createLogger } from '../observability/logger.js';
import { ConfigError } from '../settings/config-error.js';
import { parseDlqArguments, USAGE, UsageError, type DlqCommand } from './dlq-arguments.js';
import { parseDlqSettings, type DlqSettings } from './dlq-settings.js';
import { inspect } from './inspect.js';
import { progressOn } from './progress.js';
import { replay } from './replay.js';
import { inspectReport, replaySummary } from './tally.js';

/**
 * The operator's dead-letter command: `inspect` counts the dead-letter topic, `replay`
 * sends letters back (docs/operations.md, "Dead letters"). Reports go to stdout; progress
 * and logs to stderr.
 */
async function main(args: readonly string[]): Promise<number> {
  let command: DlqCommand;
  let settings: DlqSettings;
  try {
    command = parseDlqArguments(args);
    if (command.kind === 'help') {
      console.log(USAGE);
      return 0;
    }
    settings = parseDlqSettings(process.env);
  } catch (error) {
    if (error instanceof UsageError) {
      console.error(`dlq: ${error.message}\n${USAGE}`);
      return 2;
    }
    if (error instanceof ConfigError) {
      console.error(`dlq: invalid configuration: ${error.message}`);
      return 2;
    }
    throw error;
  }
  const logger = createLogger(settings.logLevel, process.stderr);
  const kafka = createKafkaClient(settings.kafka, logger);
  const { sessionTimeoutMs } = settings.kafka;
  if (command.kind === 'inspect') {
    const tally = await inspect(kafka, settings.deadLetterTopic, command.transforms, sessionTimeoutMs, progressOn(process.stderr, 'inspect'));
    console.log(inspectReport(tally));
    return 0;
  }
  const { tally, group } = await replay(kafka, settings.deadLetterTopic, command, sessionTimeoutMs, progressOn(process.stderr, 'replay'));
  console.log(replaySummary(tally, { group, maxReplays: command.maxReplays }));
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error('dlq: failed:', error);
    process.exit(1);
  },
);
