import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

const SRC = resolve(__dirname, '../../src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return /\.ts$/.test(entry.name) && !/\.spec\.ts$/.test(entry.name) ? [path] : [];
  });
}

/** The files of src a file imports (type-only imports too: they tie the modules as much). */
function importsOf(file: string, files: Set<string>): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/\bfrom '(\.{1,2}\/[^']+)'/g)]
    .map(([, target]) => resolve(dirname(file), target))
    .flatMap((target) => [`${target}.ts`, join(target, 'index.ts')].filter((f) => files.has(f)));
}

describe('src', () => {
  it('has no import cycle', () => {
    const files = new Set(sources(SRC));
    const graph = new Map([...files].map((file) => [file, importsOf(file, files)]));
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (file: string, path: string[]): void => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        const cycle = path.slice(path.indexOf(file));
        cycles.push([...cycle, file].map((f) => f.slice(SRC.length + 1)).join(' → '));
        return;
      }
      state.set(file, 'open');
      for (const next of graph.get(file) ?? []) visit(next, [...path, file]);
      state.set(file, 'done');
    };
    for (const file of files) visit(file, []);
    expect(cycles).toEqual([]);
  });
});
