import { readFileSync } from 'node:fs';

/**
 * The machine's CPU time, all cores together, as Linux's /proc/stat counts it (in clock ticks).
 * On a virtual machine, `steal` is the time its virtual CPUs wanted to run but the host ran
 * something else: a run taken while the host was busy is slower through no fault of the server.
 */
export interface HostCpuTimes {
  total: number;
  steal: number;
}

/** Reads the `cpu` line of /proc/stat: user nice system idle iowait irq softirq steal … */
export function parseProcStat(text: string): HostCpuTimes | undefined {
  const line = text.split('\n').find((l) => l.startsWith('cpu '));
  if (!line) return undefined;
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  if (fields.length < 8 || fields.some((field) => !Number.isFinite(field))) return undefined;
  // guest and guest_nice (fields 9-10) are already counted in user and nice.
  const total = fields.slice(0, 8).reduce((sum, field) => sum + field, 0);
  return { total, steal: fields[7] };
}

/** The machine's CPU times now; undefined where there is no /proc/stat (not Linux). */
export function readHostCpuTimes(): HostCpuTimes | undefined {
  try {
    return parseProcStat(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return undefined;
  }
}

/** The share of the machine's CPU time the host took between two readings, in percent. */
export function stealPercent(
  before: HostCpuTimes | undefined,
  after: HostCpuTimes | undefined,
): number | undefined {
  if (!before || !after) return undefined;
  const total = after.total - before.total;
  return total > 0 ? (100 * (after.steal - before.steal)) / total : undefined;
}
