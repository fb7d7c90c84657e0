import { mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, isAlive, repoRoot, runScript } from './processes.js';
import { waitFor } from './wait-for.js';
import { commandTopicEnvironment, commandTopicNames, type CommandTopicNames } from './command-topics.js';
import { catalogue } from '../../src/commands/catalogue.js';
const mainJs = join(repoRoot, 'dist', 'src', 'main.js');

export interface StackTopics {
  readonly events: string;
  /** Each catalogue entry's command topic. */
  readonly commands: CommandTopicNames;
  readonly deadLetter: string;
}

/** Given to the processes explicitly, so that a variable left in the caller's environment cannot move them. */
export const STACK_TOPICS: StackTopics = {
  events: 'platform.events',
  commands: commandTopicNames((name) => name),
  deadLetter: 'platform.events.dlq',
};
export const STACK_CONSUMER_GROUP = 'core-gateway-ingest';

/**
 * The production shape (scripts/stack-start.sh) on free loopback ports, with a
 * STACK_DIR of its own under the system temp dir: a broker, a ClickHouse server, two
 * gateway processes and an ingest consumer process.
 */
export interface Stack {
  readonly dir: string;
  /** Base URLs of the two gateway processes, e.g. `http://127.0.0.1:41234`. */
  readonly gatewayUrls: readonly [string, string];
  /** Base URL of HAProxy in front of both gateways. */
  readonly lbUrl: string;
  readonly brokers: readonly string[];
  readonly clickhouseUrl: string;
  readonly topics: StackTopics;
  readonly consumerGroup: string;
  /** The HS256 secret the stack generated and the gateways verify tokens with; valid once start() resolved. */
  readonly secret: string;
  /** The JSON lines a node process has logged so far (its log file also holds lines that are not JSON, which are skipped). */
  logLines(node: StackNode): LogLine[];
  /** A node's whole log file as it is now. */
  logText(node: StackNode): string;
  /** Runs stack-start.sh; resolves once every process answers /readyz. */
  start(): Promise<void>;
  /** SIGTERMs one gateway process, as a rolling restart does; resolves once it has exited. */
  terminateGateway(node: 'gateway-1' | 'gateway-2'): Promise<void>;
  /** Runs stack-start.sh again, which starts the parts that are down; resolves once they answer /readyz. */
  startAgain(): Promise<void>;
  /** SIGKILLs the consumer process, as a crash would; resolves once it is gone. */
  killConsumer(): Promise<void>;
  /** Starts the consumer again through stack-start.sh; resolves once it has joined its group. */
  restartConsumer(): Promise<void>;
  /** Waits for a start still under way, stops every process and removes the stack's directory. */
  stop(): Promise<void>;
}

export type StackNode = 'gateway-1' | 'gateway-2' | 'consumer';

/** One pino line: its message and the fields beside it. */
export type LogLine = Readonly<Record<string, unknown>> & { readonly msg?: string };

function parseLogLines(text: string): LogLine[] {
  const lines: LogLine[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      lines.push(JSON.parse(line) as LogLine);
    } catch {
      // A line cut short by a kill; the next start writes on.
    }
  }
  return lines;
}

interface StackPorts {
  /** The first gateway's; the second listens on gateway + 1. */
  readonly gateway: number;
  readonly consumer: number;
  readonly lb: number;
  readonly kafka: number;
  readonly kafkaController: number;
  readonly clickhouse: number;
}

/** Distinct free ports for every part; the gateways' two are consecutive. */
async function pickPorts(): Promise<StackPorts> {
  const taken = new Set<number>();
  const pick = async (span = 1): Promise<number> => {
    for (;;) {
      const port = await freePort(span);
      const range = Array.from({ length: span }, (_, i) => port + i);
      if (range.some((p) => taken.has(p))) continue;
      for (const p of range) taken.add(p);
      return port;
    }
  };
  const gateway = await pick(2);
  return { gateway, consumer: await pick(), lb: await pick(), kafka: await pick(), kafkaController: await pick(), clickhouse: await pick() };
}

// The stack's configuration is this module's to decide, not the caller's shell's; the
// jar cache is machine-wide and stays.
const INHERITED_CONFIG = new RegExp(`^(AUTH_|KAFKA_|CLICKHOUSE_|STACK_|INGEST_)|^(PORT|HOST|ROLE|DATA_DIR|LOG_LEVEL|CURSOR_SECRET|CONSUMER_PORT|LB_PORT|COMMAND_TIMEOUT_MS|EVENTS_TOPICS|EVENTS_DLQ_TOPIC|${catalogue.map(({ topic }) => topic.setting).join('|')})$`);
const KEPT = new Set(['KAFKA_CACHE_DIR']);

function stackEnvironment(dir: string, ports: StackPorts): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (KEPT.has(name) || !INHERITED_CONFIG.test(name)) env[name] = value;
  }
  return {
    ...env,
    STACK_DIR: dir,
    PORT: String(ports.gateway),
    CONSUMER_PORT: String(ports.consumer),
    LB_PORT: String(ports.lb),
    KAFKA_PORT: String(ports.kafka),
    KAFKA_CONTROLLER_PORT: String(ports.kafkaController),
    CLICKHOUSE_PORT: String(ports.clickhouse),
    EVENTS_TOPICS: STACK_TOPICS.events,
    ...commandTopicEnvironment(STACK_TOPICS.commands),
    EVENTS_DLQ_TOPIC: STACK_TOPICS.deadLetter,
    KAFKA_CONSUMER_GROUP: STACK_CONSUMER_GROUP,
    KAFKA_TOPIC_PARTITIONS: '3',
    INGEST_BATCH_WAIT_MS: '50',
    LOG_LEVEL: 'info',
  };
}

/** The check stack-stop.sh makes before any signal: node on dist/src/main.js, marked as this stack's `name`. */
function isStackProcess(pid: number, dir: string, name: string): boolean {
  try {
    const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return args.includes(mainJs) && environ.includes(`CORE_GATEWAY_STACK=${join(dir, name)}`);
  } catch {
    return false;
  }
}

function processId(dir: string, name: string): number | undefined {
  try {
    const pid = Number(readFileSync(join(dir, 'run', `${name}.pid`), 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Picks the ports and the directory; nothing runs until start(). `extraEnv` reaches every process (RATE_LIMIT_PER_ORG, say). */
export async function createStack(extraEnv: Readonly<Record<string, string>> = {}): Promise<Stack> {
  // Resolved as stack-start.sh resolves STACK_DIR (pwd -P): the processes' marker holds that path.
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'core-gateway-stack-')));
  const ports = await pickPorts();
  const env = { ...stackEnvironment(dir, ports), ...extraEnv };
  let starting: Promise<void> | undefined;
  let secret: string | undefined;
  const logText = (node: StackNode) => readFileSync(join(dir, 'logs', `${node}.log`), 'utf8');

  return {
    dir,
    gatewayUrls: [`http://127.0.0.1:${ports.gateway}`, `http://127.0.0.1:${ports.gateway + 1}`],
    lbUrl: `http://127.0.0.1:${ports.lb}`,
    brokers: [`127.0.0.1:${ports.kafka}`],
    clickhouseUrl: `http://127.0.0.1:${ports.clickhouse}`,
    topics: STACK_TOPICS,
    consumerGroup: STACK_CONSUMER_GROUP,
    get secret() {
      if (secret === undefined) throw new Error('the stack has not started');
      return secret;
    },
    logText: (node) => logText(node),
    logLines: (node) => parseLogLines(logText(node)),
    async start() {
      starting = runScript('stack-start.sh', {}, env);
      await starting;
      secret = readFileSync(join(dir, 'auth-jwt-secret'), 'utf8').trim();
    },
    async terminateGateway(node) {
      const pid = processId(dir, node);
      if (pid === undefined || !isAlive(pid) || !isStackProcess(pid, dir, node)) throw new Error(`${node} is not running`);
      process.kill(pid, 'SIGTERM');
      await waitFor(`${node} gone after SIGTERM`, async () => (isAlive(pid) ? undefined : true), 60_000, 20);
    },
    async startAgain() {
      starting = runScript('stack-start.sh', {}, env);
      await starting;
    },
    async killConsumer() {
      const pid = processId(dir, 'consumer');
      if (pid === undefined || !isAlive(pid) || !isStackProcess(pid, dir, 'consumer')) throw new Error('the consumer is not running');
      process.kill(pid, 'SIGKILL');
      await waitFor('the killed consumer gone', async () => (isAlive(pid) ? undefined : true), 10_000, 20);
    },
    async restartConsumer() {
      starting = runScript('stack-start.sh', {}, env);
      await starting;
    },
    async stop() {
      await starting?.catch(() => undefined);
      await runScript('stack-stop.sh', { STACK_WIPE: '1' }, env);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
