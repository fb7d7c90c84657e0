/**
 * Where a load run's CPU went, read from /proc: the machine's busy share, the process
 * under load (the gateway, or bare Koa), and the Kafka brokers on the machine. With the
 * load generator's own CPU (it reports it with its result) this shows which process
 * limits a run: a gateway whose event loop is saturated reads about one core while the
 * machine still has CPU to spare, and a generator well short of a core is not the limit.
 */
import { readdirSync, readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

/** utime + stime of a process, in seconds; 0 once it is gone. */
function processSeconds(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/** Busy and total jiffies of all cores since boot. */
function machineJiffies(): { busy: number; total: number } {
  const [, ...values] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = values.map(Number);
  const total = user + nice + system + idle + iowait + irq + softirq + steal;
  return { busy: total - idle - iowait, total };
}

/** The JVMs running kafka.Kafka on this machine (the run's own broker). */
function brokerPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('kafka.Kafka')) pids.push(Number(entry));
    } catch {
      // The process ended while the list was read.
    }
  }
  return pids;
}

export interface CpuShares {
  /** Of all cores: 0.73 is 73% of the machine busy. */
  readonly machineBusy: number;
  /** Cores' worth of CPU of the process under load over the run: 1.1 is a core and a tenth. */
  readonly processCores: number;
  readonly brokerCores: number;
}

/** Starts measuring; the returned function ends it and gives the shares over the interval. */
function measureCpu(pid: number): () => CpuShares {
  const brokers = brokerPids();
  const started = performance.now();
  const machine = machineJiffies();
  const server = processSeconds(pid);
  const broker = brokers.reduce((sum, pid) => sum + processSeconds(pid), 0);
  return () => {
    const seconds = (performance.now() - started) / 1000;
    const now = machineJiffies();
    return {
      machineBusy: (now.busy - machine.busy) / (now.total - machine.total),
      processCores: (processSeconds(pid) - server) / seconds,
      brokerCores: (brokers.reduce((sum, pid) => sum + processSeconds(pid), 0) - broker) / seconds,
    };
  };
}

/** Runs `load` while measuring where the CPU went, process `pid` being the one under load. */
export async function withCpu<T>(pid: number, load: () => Promise<T>): Promise<[T, CpuShares]> {
  const cpu = measureCpu(pid);
  const result = await load();
  return [result, cpu()];
}

/** Cores as a short figure: 1.08 cores, 0.21 of a core. */
function cores(value: number): string {
  const text = value.toFixed(2);
  return `${text} ${Number(text) >= 1 ? 'cores' : 'of a core'}`;
}

/**
 * Where a load run's CPU went, as a row's note: "CPU: gateway 1.05 cores (155 µs a
 * request), broker 0.17 of a core, load generator 0.22 of a core, machine 75% busy".
 */
export function describeCpu(name: string, shares: CpuShares, run: { readonly perSecond: number; readonly generatorCores?: number }, options: { readonly broker: boolean }): string {
  const parts = [`${name} ${cores(shares.processCores)} (${Math.round((shares.processCores / run.perSecond) * 1e6)} µs a request)`];
  if (options.broker) parts.push(`broker ${cores(shares.brokerCores)}`);
  if (run.generatorCores !== undefined) parts.push(`load generator ${cores(run.generatorCores)}`);
  parts.push(`machine ${Math.round(shares.machineBusy * 100)}% busy`);
  return `CPU: ${parts.join(', ')}`;
}
