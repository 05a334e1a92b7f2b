import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

type CallFrame = { functionName: string; url: string };

/** Node's own HTTP, socket, stream and timer modules. */
const NODE_HTTP =
  /^node:(_http|http|net|stream|internal\/(streams|stream_base|http|net|dns|timers))/;

/** The parts of a V8 `.cpuprofile` (written by `node --cpu-prof`) that the summaries need. */
interface CpuProfile {
  nodes: { id: number; callFrame: CallFrame; children?: number[] }[];
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
export function stageOf(callFrame: CallFrame): string {
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
  if (NODE_HTTP.test(url)) return 'node http/net/streams';
  if (url.startsWith('node:')) return 'node core (other)';
  return 'native (socket writes, hashing, JSON …)';
}

type Phase = [phase: string, matches: (frame: CallFrame) => boolean];

/**
 * The phases of a request that own everything they call, most specific first: a sample belongs to
 * the first of them that any frame of its stack matches (a socket write under Express's `send` is
 * the reply's, JSON under the envelope interceptor the envelope's, the passport calls under the
 * guard the bearer check's).
 */
const ENCLOSING_PHASES: Phase[] = [
  ['garbage collection', (f) => f.functionName === '(garbage collector)'],
  [
    'reply: headers and socket write (Express send)',
    (f) => /\/express\/lib\/response\.js$/.test(f.url) && /^(send|json|end)$/.test(f.functionName),
  ],
  ['envelope: JSON, ETag, Link (interceptor)', (f) => f.url.includes('page-envelope.interceptor')],
  ['query validation (pipe)', (f) => f.url.includes('/validation/')],
  [
    'bearer check (guard, passport, token cache)',
    (f) => /\/dist\/auth\/|\/passport|auth\.guard/.test(f.url),
  ],
  [
    'listing: SQL, mysql2 (query write, row parsing), rows to items',
    (f) =>
      /\/dist\/(common\/listing|users|login-activities|database)\//.test(f.url) ||
      /\/node_modules\/(mysql2|typeorm)\//.test(f.url),
  ],
];

/**
 * The phases of the request's way in. Each middleware calls the next one, so these own only what
 * they do themselves (Node calls they make included): a sample outside the phases above belongs to
 * its innermost frame that matches one of these.
 */
const INNERMOST_PHASES: Phase[] = [
  [
    'access log and metrics',
    (f) => /\/dist\/(logging|metrics)\//.test(f.url) || f.url.includes('/prom-client/'),
  ],
  [
    'other middleware (request id, in-flight, headers, 405/406, rate limit)',
    (f) => /\/dist\/(common\/http|rate-limit)\//.test(f.url),
  ],
  [
    'Nest pipeline (router context, rxjs, adapter)',
    (f) => /\/node_modules\/(@nestjs|rxjs)\//.test(f.url),
  ],
  ['Express router', (f) => /\/node_modules\/(express|router)\//.test(f.url)],
];
const NODE_HTTP_PHASE = 'Node HTTP: parsing, sockets, timers';
const OTHER_PHASE = 'other (promises, events, other packages)';

/** Node's own HTTP work counts as such only when none of the phases above called it. */
function innermostPhase(frames: CallFrame[]): string {
  for (const frame of frames) {
    const phase = INNERMOST_PHASES.find(([, matches]) => matches(frame));
    if (phase) return phase[0];
  }
  return frames.some((frame) => NODE_HTTP.test(frame.url)) ? NODE_HTTP_PHASE : OTHER_PHASE;
}

function shares(micros: Map<string, number>, requestsServed: number): StageShare[] {
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

/**
 * The phase (ENCLOSING_PHASES, then INNERMOST_PHASES) of each node of a profile, from its whole
 * stack; remembered per node.
 */
function phasesOf(profile: CpuProfile): (nodeId: number) => string {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
  const phaseById = new Map<number, string>();
  return (id) => {
    const known = phaseById.get(id);
    if (known) return known;
    const frames: CallFrame[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      frames.push(byId.get(at)!.callFrame);
    }
    const phase =
      frames[0].functionName === '(idle)'
        ? '(idle)'
        : (ENCLOSING_PHASES.find(([, matches]) => frames.some(matches))?.[0] ??
          innermostPhase(frames));
    phaseById.set(id, phase);
    return phase;
  };
}

export interface ProfileSummary {
  /** Self time by package (`stageOf` the sample's own frame). */
  byPackage: StageShare[];
  /** The same time by phase of the request, from the sample's whole stack: per-stage timings. */
  byPhase: StageShare[];
}

/**
 * Busy time over every profile in `dir`, as shares of the busy time, counting only the samples
 * from `fromMicros` after the process started until `toMicros` (the load, not the boot or the
 * warm-up).
 */
export function summarizeProfiles(
  dir: string,
  requestsServed: number,
  fromMicros: number,
  toMicros: number,
): ProfileSummary {
  const byPackage = new Map<string, number>();
  const byPhase = new Map<string, number>();
  const add = (micros: Map<string, number>, label: string, time: number) =>
    micros.set(label, (micros.get(label) ?? 0) + time);
  for (const file of readdirSync(dir).filter((name) => name.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
    const stageById = new Map(profile.nodes.map((node) => [node.id, stageOf(node.callFrame)]));
    const phaseOf = phasesOf(profile);
    let elapsed = 0;
    profile.samples.forEach((id, i) => {
      elapsed += profile.timeDeltas[i] ?? 0;
      if (elapsed < fromMicros || elapsed > toMicros) return;
      const time = profile.timeDeltas[i + 1] ?? 0;
      add(byPackage, stageById.get(id) ?? 'unknown', time);
      add(byPhase, phaseOf(id), time);
    });
  }
  return { byPackage: shares(byPackage, requestsServed), byPhase: shares(byPhase, requestsServed) };
}
