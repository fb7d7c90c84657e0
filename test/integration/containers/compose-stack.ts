import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse } from 'yaml';
import { freePort } from '../../support/processes.js';

/**
 * Runs the services of a compose file as containers through the engine's command line (podman
 * here, docker where CONTAINER_CLI says so), honouring what the file says about images, the
 * build, environment, ${VAR} interpolation, ports, ulimits, named volumes, service names on
 * one network, health checks and `depends_on: condition: service_healthy`.
 *
 * Why not `docker compose` or `podman-compose`: podman 4.3 runs health checks from systemd
 * timers, and with no systemd here a container's health never leaves "starting", so a compose
 * tool would wait forever on the file's `service_healthy` conditions. This runner runs each
 * health check itself, with `exec`, at the file's interval. Everything else is read from the
 * file, so a wrong port, address, variable or check in it fails here as it would for a user.
 */

interface HealthCheck {
  readonly test: readonly string[];
  readonly interval?: string;
  readonly retries?: number;
}

interface Service {
  readonly image?: string;
  readonly build?: string | { readonly context?: string; readonly dockerfile?: string; readonly args?: Readonly<Record<string, string>> };
  readonly environment?: Readonly<Record<string, string | number>>;
  readonly ports?: readonly string[];
  readonly depends_on?: Readonly<Record<string, { readonly condition?: string }>>;
  readonly healthcheck?: HealthCheck;
  readonly ulimits?: Readonly<Record<string, { readonly soft: number; readonly hard: number } | number>>;
  readonly volumes?: readonly string[];
}

interface ComposeFile {
  readonly services: Readonly<Record<string, Service>>;
}

/** The label every container, network and volume of a run carries, so a leftover is found and removed. */
export const COMPOSE_TEST_LABEL = 'core-gateway.test=compose';

const CLI = process.env['CONTAINER_CLI'] || 'podman';

export function cli(args: readonly string[], timeoutMs = 600_000): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    execFile(CLI, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${CLI} ${args.slice(0, 3).join(' ')} failed: ${stderr.trim().slice(-2000) || error.message}`, { cause: error }));
      else resolvePromise(stdout);
    });
  });
}

/** Compose's interpolation: ${VAR}, ${VAR:-default}, ${VAR-default}, ${VAR:?error}, ${VAR?error}, and $$ for a dollar. */
export function interpolate(text: string, env: NodeJS.ProcessEnv): string {
  return text.replace(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?)([-?])([^}]*))?\}/g, (whole, name: string | undefined, colon: string, op: string, arg: string) => {
    if (whole === '$$') return '$';
    const value = env[name!];
    if (value !== undefined && !(colon === ':' && value === '')) return value;
    if (op === '?') throw new Error(`compose: ${name} is required: ${arg}`);
    return op === '-' ? arg : '';
  });
}

function interpolateAll(value: unknown, env: NodeJS.ProcessEnv): unknown {
  if (typeof value === 'string') return interpolate(value, env);
  if (Array.isArray(value)) return value.map((v) => interpolateAll(v, env));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolateAll(v, env)]));
  }
  return value;
}

function seconds(duration: string | undefined, fallback: number): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(duration ?? '');
  if (!match) return fallback;
  const n = Number(match[1]);
  return match[2] === 'ms' ? n / 1000 : match[2] === 'm' ? n * 60 : n;
}

/** Services in an order that starts every service after those it depends on. */
function startOrder(services: Readonly<Record<string, Service>>): string[] {
  const order: string[] = [];
  const visit = (name: string, path: readonly string[]) => {
    if (order.includes(name)) return;
    if (path.includes(name)) throw new Error(`compose: a dependency cycle through ${name}`);
    const service = services[name];
    if (service === undefined) throw new Error(`compose: ${path.at(-1)} depends on an unknown service ${name}`);
    for (const dep of Object.keys(service.depends_on ?? {})) visit(dep, [...path, name]);
    order.push(name);
  };
  for (const name of Object.keys(services)) visit(name, []);
  return order;
}

/** The hard limit this process may not exceed: a container cannot be given more. */
async function hardLimit(resource: string): Promise<number> {
  const flag = resource === 'nofile' ? '-Hn' : resource === 'nproc' ? '-Hu' : undefined;
  if (flag === undefined) return Number.POSITIVE_INFINITY;
  const text = await new Promise<string>((r) => execFile('bash', ['-c', `ulimit ${flag}`], (_e, out) => r(out.trim())));
  return text === 'unlimited' || text === '' ? Number.POSITIVE_INFINITY : Number(text);
}

/**
 * podman's configured default ulimits (containers.conf's default_ulimits, as
 * scripts/containers-setup.sh writes them): a container given one --ulimit loses the others, and
 * falls back to podman's built-in ones, which this machine refuses.
 */
function engineDefaultUlimits(): Record<string, { soft: number; hard: number }> {
  if (CLI !== 'podman') return {};
  let text = '';
  try {
    text = readFileSync('/etc/containers/containers.conf', 'utf8');
  } catch {
    return {};
  }
  const list = /^\s*default_ulimits\s*=\s*\[([^\]]*)\]/m.exec(text)?.[1] ?? '';
  const limits: Record<string, { soft: number; hard: number }> = {};
  for (const [, name, soft, hard] of list.matchAll(/"(\w+)=(\d+):(\d+)"/g)) limits[name!] = { soft: Number(soft), hard: Number(hard) };
  return limits;
}

export interface ComposeStack {
  /** The host address of a service's published container port. */
  url(service: string, containerPort: number): string;
  container(service: string): string;
  logs(service: string): Promise<string>;
  /** Removes every container, the network and the volumes of the run. */
  remove(): Promise<void>;
}

export interface ComposeOptions {
  readonly file: string;
  readonly env: NodeJS.ProcessEnv;
  /** Called with each line of progress. */
  readonly log?: (line: string) => void;
}

export async function startCompose(options: ComposeOptions): Promise<ComposeStack> {
  const file = resolve(options.file);
  const raw = parse(readFileSync(file, 'utf8'), { merge: true }) as ComposeFile;
  const compose = interpolateAll(raw, options.env) as ComposeFile;
  const project = `core-compose-${randomBytes(4).toString('hex')}`;
  const log = options.log ?? (() => undefined);
  const containers = new Map<string, string>();
  const published = new Map<string, number>();
  const volumes = new Set<string>();
  let networkCreated = false;

  const stack: ComposeStack = {
    url(service, containerPort) {
      const port = published.get(`${service}:${containerPort}`);
      if (port === undefined) throw new Error(`compose: ${service} publishes no port ${containerPort}`);
      return `http://127.0.0.1:${port}`;
    },
    container(service) {
      const name = containers.get(service);
      if (name === undefined) throw new Error(`compose: ${service} was not started`);
      return name;
    },
    logs: (service) => cli(['logs', stack.container(service)]).catch((e: unknown) => String(e)),
    async remove() {
      const errors: unknown[] = [];
      for (const name of [...containers.values()].reverse()) await cli(['rm', '-f', '-t', '10', name]).catch((e: unknown) => errors.push(e));
      for (const volume of volumes) await cli(['volume', 'rm', '-f', volume]).catch((e: unknown) => errors.push(e));
      if (networkCreated) await cli(['network', 'rm', '-f', project]).catch((e: unknown) => errors.push(e));
      if (errors.length > 0) throw new AggregateError(errors, `compose: ${errors.length} resources of ${project} could not be removed`);
    },
  };

  try {
    await cli(['network', 'create', '--label', COMPOSE_TEST_LABEL, project]);
    networkCreated = true;
    const built = new Set<string>();
    for (const name of startOrder(compose.services)) {
      const service = compose.services[name]!;
      for (const [dep, { condition }] of Object.entries(service.depends_on ?? {})) {
        if (condition !== undefined && condition !== 'service_healthy' && condition !== 'service_started') {
          throw new Error(`compose: ${name} depends on ${dep} with condition ${condition}, which this runner does not know`);
        }
      }
      const image = service.image ?? `${project}-${name}`;
      if (service.build !== undefined && !built.has(image)) {
        const build = typeof service.build === 'string' ? { context: service.build } : service.build;
        const context = resolve(dirname(file), build.context ?? '.');
        const args = Object.entries(build.args ?? {}).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]);
        log(`building ${image} from ${context}`);
        await cli(['build', '-q', ...args, '-t', image, '-f', resolve(context, build.dockerfile ?? 'Dockerfile'), context], 1_200_000);
        built.add(image);
      }
      const runArgs = ['run', '-d', '--name', `${project}-${name}`, '--label', COMPOSE_TEST_LABEL, '--network', project, '--network-alias', name];
      for (const [key, value] of Object.entries(service.environment ?? {})) runArgs.push('-e', `${key}=${String(value)}`);
      for (const mapping of service.ports ?? []) {
        const containerPort = Number(mapping.split(':').at(-1));
        // The file's host port may be taken here; a free one stands in, and url() finds it.
        const hostPort = await freePort();
        published.set(`${name}:${containerPort}`, hostPort);
        runArgs.push('-p', `127.0.0.1:${hostPort}:${containerPort}`);
      }
      const ulimits = service.ulimits === undefined ? {} : { ...engineDefaultUlimits(), ...service.ulimits };
      for (const [resource, limit] of Object.entries(ulimits)) {
        // Capped at what this machine allows a process (it forbids raising a hard limit).
        const cap = await hardLimit(resource);
        const soft = Math.min(typeof limit === 'number' ? limit : limit.soft, cap);
        const hard = Math.min(typeof limit === 'number' ? limit : limit.hard, cap);
        runArgs.push('--ulimit', `${resource}=${soft}:${hard}`);
      }
      for (const spec of service.volumes ?? []) {
        const [source, target, ...rest] = spec.split(':');
        if (source === undefined || target === undefined || source.startsWith('.') || source.startsWith('/')) {
          throw new Error(`compose: ${name}'s volume ${spec} is not a named volume, which this runner does not know`);
        }
        const volume = `${project}-${source}`;
        if (!volumes.has(volume)) await cli(['volume', 'create', '--label', COMPOSE_TEST_LABEL, volume]);
        volumes.add(volume);
        runArgs.push('-v', [volume, target, ...rest].join(':'));
      }
      log(`starting ${name} (${image})`);
      containers.set(name, `${project}-${name}`);
      await cli([...runArgs, image]);
      if (service.healthcheck !== undefined && Object.values(compose.services).some((s) => s.depends_on?.[name]?.condition === 'service_healthy')) {
        await waitHealthy(name, `${project}-${name}`, service.healthcheck, log);
      }
    }
    return stack;
  } catch (error) {
    for (const name of containers.keys()) log(`---- ${name}'s log ----\n${(await stack.logs(name)).slice(-4000)}`);
    await stack.remove().catch(() => undefined);
    throw error;
  }
}

/** Runs the service's health check in its container until it passes, as the engine would. */
export async function waitHealthy(name: string, container: string, check: HealthCheck, log: (line: string) => void): Promise<void> {
  const [kind, ...rest] = check.test;
  const command = kind === 'CMD-SHELL' ? ['sh', '-c', rest.join(' ')] : kind === 'CMD' ? rest : undefined;
  if (command === undefined) throw new Error(`compose: ${name}'s health check ${check.test.join(' ')} is neither CMD nor CMD-SHELL`);
  const intervalMs = seconds(check.interval, 30) * 1000;
  // The file's retries bound the wait; a loaded 2-core machine gets at least three minutes.
  const deadline = Date.now() + Math.max(intervalMs * (check.retries ?? 3), 180_000);
  let last = '';
  for (;;) {
    try {
      await cli(['exec', container, ...command], 60_000);
      log(`${name} is healthy`);
      return;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    const state = (await cli(['inspect', '--format', '{{.State.Status}}', container]).catch(() => '')).trim();
    if (state !== 'running') throw new Error(`compose: ${name} is ${state || 'gone'} before its health check passed (last: ${last})`);
    if (Date.now() > deadline) throw new Error(`compose: ${name}'s health check did not pass in time (last: ${last})`);
    await new Promise((r) => setTimeout(r, Math.min(intervalMs, 2000)));
  }
}
