import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../kit/processes';

describe('docs/testing.md', () => {
  it('shows test/e2e/kit-example.e2e-spec.ts as it is (the suite runs it)', () => {
    const doc = readFileSync(join(PROJECT_ROOT, 'docs', 'testing.md'), 'utf8');
    const shown = /```ts\n([\s\S]*?)```\n/.exec(doc)?.[1];
    const spec = readFileSync(join(PROJECT_ROOT, 'test', 'e2e', 'kit-example.e2e-spec.ts'), 'utf8');
    expect(shown).toBe(spec);
  });
});
