import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The parts of a V8 `.cpuprofile` (written by `node --cpu-prof`) that self time needs. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string } }[];
  samples: number[];
  timeDeltas: number[];
}

export interface StageShare {
  stage: string;
  /** Share of the busy (non-idle) samples, 0 … 1. */
  share: number;
  /** Busy CPU time spent there, per request served, in µs. */
  microsPerRequest: number;
}

/**
 * Where a frame's self time belongs: the package it comes from (`typeorm`, `express`, …), the
 * app's own code, Node's HTTP/stream internals, or V8's garbage collector.
 */
export function stageOf(callFrame: { functionName: string; url: string }): string {
  const { functionName, url } = callFrame;
  if (functionName === '(garbage collector)') return 'V8 garbage collector';
  if (functionName === '(idle)') return '(idle)';
  if (functionName === '(program)') return 'V8/native (program)';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules >= 0) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  }
  if (url.includes('/dist/')) return 'app code (dist/)';
  if (/^node:(_http|http|net|stream|internal\/(streams|stream_base|http|net|dns|timers))/.test(url))
    return 'node http/net/streams';
  if (url.startsWith('node:')) return 'node core (other)';
  return 'native (socket writes, hashing, JSON …)';
}

/**
 * Self time per stage over every profile in `dir`, as shares of the busy time, counting only the
 * samples from `fromMicros` after the process started until `toMicros` (the load, not the boot
 * or the warm-up).
 */
export function summarizeProfiles(
  dir: string,
  requestsServed: number,
  fromMicros: number,
  toMicros: number,
): StageShare[] {
  const micros = new Map<string, number>();
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const stageById = new Map(profile.nodes.map((node) => [node.id, stageOf(node.callFrame)]));
    let elapsed = 0;
    profile.samples.forEach((id, i) => {
      elapsed += profile.timeDeltas[i] ?? 0;
      if (elapsed < fromMicros || elapsed > toMicros) return;
      const stage = stageById.get(id) ?? 'unknown';
      micros.set(stage, (micros.get(stage) ?? 0) + (profile.timeDeltas[i + 1] ?? 0));
    });
  }
  micros.delete('(idle)');
  const busy = [...micros.values()].reduce((sum, value) => sum + value, 0) || 1;
  return [...micros.entries()]
    .map(([stage, value]) => ({
      stage,
      share: value / busy,
      microsPerRequest: value / Math.max(1, requestsServed),
    }))
    .sort((a, b) => b.share - a.share);
}
