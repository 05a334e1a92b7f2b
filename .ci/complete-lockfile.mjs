#!/usr/bin/env node
// The npm registry reachable here does not serve every platform build of packages such as
// @swc/core (darwin, win32, …), so `npm install` leaves them out of package-lock.json and
// `npm ci` then refuses the lock as out of sync. This adds the missing optional entries with
// the os/cpu their names state, so npm ci skips them on other platforms instead of failing.
// Run after any change to the lock: node .ci/complete-lockfile.mjs
import { readFileSync, writeFileSync } from 'node:fs';

const path = new URL('../package-lock.json', import.meta.url);
const lock = JSON.parse(readFileSync(path, 'utf8'));
const packages = lock.packages;
const OS = ['darwin', 'win32', 'linux', 'android', 'freebsd', 'openharmony', 'sunos', 'aix'];
const CPU = ['arm64', 'x64', 'ia32', 'arm', 'ppc64', 's390x', 'riscv64', 'loong64'];
let added = 0;

for (const [location, entry] of Object.entries(packages)) {
  for (const [name, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const nested = `${location ? `${location}/` : ''}node_modules/${name}`;
    if (packages[nested] || packages[`node_modules/${name}`]) continue;
    const parts = name.split(/[-/]/);
    const os = OS.find((candidate) => parts.includes(candidate));
    const cpu = CPU.find((candidate) => parts.includes(candidate)) ?? (parts.includes('eabi') ? 'arm' : undefined);
    if (!os || !cpu) continue;
    packages[`node_modules/${name}`] = { version, cpu: [cpu], os: [os], optional: true };
    added++;
  }
}
lock.packages = Object.fromEntries(Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))));
writeFileSync(path, `${JSON.stringify(lock, null, 2)}\n`);
console.log(`complete-lockfile: added ${added} platform entries`);
