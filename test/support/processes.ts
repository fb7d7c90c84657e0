import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
export const repoRoot = resolve(import.meta.dirname, '..', '..');

function ephemeralRangeStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}

function canListenOn(port: number): Promise<boolean> {
  return new Promise((done) => {
    const server = createServer();
    server.once('error', () => done(false));
    server.listen(port, '127.0.0.1', () => server.close(() => done(true)));
  });
}

async function canListen(first: number, span: number): Promise<boolean> {
  for (let port = first; port < first + span; port += 1) if (!(await canListenOn(port))) return false;
  return true;
}

/**
 * A free port on 127.0.0.1 below the kernel's ephemeral range; with `span`, the ports
 * after it up to span - 1 are free too. A server the tests kill and
 * restart must not sit in that range: while it is down, its clients' reconnects take
 * source ports from there, and one that draws the server's own port connects to itself
 * (TCP self-connect) and holds it, so the server cannot listen again.
 */
export async function freePort(span = 1): Promise<number> {
  const below = Math.min(ephemeralRangeStart(), 32768);
  if (below <= 21000) throw new Error(`the ephemeral port range starts at ${below}; the tests need free ports between 20000 and it`);
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const port = 20000 + Math.floor(Math.random() * (below - 20000 - span));
    if (await canListen(port, span)) return port;
  }
  throw new Error(`no free port found between 20000 and ${below}`);
}

/** Runs one of the project's scripts/ with extra environment over `base`; its output becomes the error when it fails. */
export async function runScript(name: string, env: Record<string, string>, base: NodeJS.ProcessEnv = process.env): Promise<void> {
  try {
    await run('bash', [join(repoRoot, 'scripts', name)], { env: { ...base, ...env }, maxBuffer: 10 * 1024 * 1024 });
  } catch (error) {
    const e = error as { stdout?: string; stderr?: string };
    throw new Error(`scripts/${name} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`, { cause: error });
  }
}

/**
 * Whether a process is still there. A zombie whose last thread has exited counts as gone
 * (this machine's init may reap it late). A thread-group leader shows as a zombie as soon
 * as its own thread exits, while its other threads may still hold the process's sockets;
 * a SIGKILLed JVM looks like that for a while, so it is gone only when no task is left but the leader.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') return true;
    return readdirSync(`/proc/${pid}/task`).length > 1;
  } catch {
    return false;
  }
}

/** The value of KEY=... in a scripts' state file, or undefined. */
export function stateValue(file: string, key: string): string | undefined {
  try {
    return new RegExp(`^${key}=(.*)$`, 'm').exec(readFileSync(file, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}
