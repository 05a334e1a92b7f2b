import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { subset } from 'semver';
import { PROJECT_ROOT } from '../kit/processes';

const read = (file: string) => readFileSync(join(PROJECT_ROOT, file), 'utf8');

describe('the Node versions the project installs on', () => {
  const ours = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;

  it('refuses to install on another (npm warns only, and better-sqlite3 then crashes the suite)', () => {
    expect(read('.npmrc')).toMatch(/^engine-strict=true$/m);
  });

  it('claims no version a locked package refuses', () => {
    const { packages } = JSON.parse(read('package-lock.json')) as {
      packages: Record<string, { engines?: { node?: string } }>;
    };
    const narrower = Object.entries(packages)
      .filter(([path, { engines }]) => path && engines?.node && !subset(ours, engines.node))
      .map(([path, { engines }]) => `${path}: ${engines!.node}`);
    expect(narrower).toEqual([]);
  });
});
