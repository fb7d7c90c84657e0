/**
 * CPU time of the processes that take part in an ingest run, read from /proc: the broker's
 * JVM, the ClickHouse server (where the Kafka engine's consumers run) and the gateway's
 * consumer. Each is found by what it is, not by its name: the process that holds the
 * listening socket of the run's own port, so another developer's broker or server on the
 * same machine is never counted.
 */
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

/** utime + stime of a process (every thread), in seconds; 0 once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Inodes of the sockets listening on `port` (IPv4 and IPv6). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10 || cols[3] !== '0A') continue;
      if (Number.parseInt(cols[1]!.split(':')[1]!, 16) === port) inodes.add(cols[9]!);
    }
  }
  return inodes;
}

/** The process listening on the loopback port, or a clear error: a CPU figure without it would leave a process out. */
export function listenerPid(port: number): number {
  const inodes = listeningInodes(port);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${entry}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        const link = readlinkSync(`/proc/${entry}/fd/${fd}`);
        if (link.startsWith('socket:[') && inodes.has(link.slice(8, -1))) return Number(entry);
      } catch {
        // The descriptor closed while the list was read.
      }
    }
  }
  throw new Error(`no process of this user listens on port ${port}`);
}

export const portOf = (address: string): number => Number(new URL(address.includes('://') ? address : `tcp://${address}`).port);

export type CpuBreakdown = Readonly<Record<string, number>>;

/** Starts counting the named processes' CPU; the returned function gives each one's seconds since. */
export function cpuMeter(pids: Readonly<Record<string, number>>): () => CpuBreakdown {
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));
  return () => Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid) - before[name]!]));
}

/** "412 µs an event (broker 60, server 210, consumer 142)". */
export function describeCpuPerEvent(cpu: CpuBreakdown, events: number): string {
  const micros = (s: number) => Math.round((s * 1e6) / events);
  const total = Object.values(cpu).reduce((a, b) => a + b, 0);
  return `${micros(total)} µs CPU an event (${Object.entries(cpu)
    .map(([name, s]) => `${name} ${micros(s)}`)
    .join(', ')})`;
}

export const cpuMicrosPerEvent = (cpu: CpuBreakdown, events: number): number =>
  Math.round((Object.values(cpu).reduce((a, b) => a + b, 0) * 1e6) / events);
