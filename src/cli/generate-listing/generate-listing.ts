import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';

/** The spellings of one listing's name that the templates use, e.g. for `audit-events`. */
export interface ListingNames {
  /** `AuditEvents`: module, controller, service, repository, DTO. */
  Plural: string;
  /** `AuditEvent`: entity, view, envelope. */
  Singular: string;
  /** `auditEvents`: the definition (`auditEventsListing`). */
  camel: string;
  /** `audit-events`: the folder and file names. */
  kebab: string;
  /** `audit-event`: the view's file name. */
  singularKebab: string;
  /** `audit_events`: the table, the route, the resource and the scope. */
  snake: string;
  /** `AUDIT_EVENTS`: the scope constant (`AUDIT_EVENTS_READ`). */
  CONST: string;
  /** `audit events`: in descriptions. */
  words: string;
}

const NAME = /^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$/;

/** `audit-events` or `audit_events` (plural, lower case), and its singular unless given. */
export function listingNames(name: string, singular?: string): ListingNames {
  if (!NAME.test(name)) {
    throw new Error(
      `"${name}" is not a listing name: lower-case words joined by - or _, plural (e.g. delivery-addresses)`,
    );
  }
  const words = name.split(/[-_]/);
  const singularWords = singular ? singular.split(/[-_]/) : [...words];
  if (singular && !NAME.test(singular)) throw new Error(`"${singular}" is not a singular name`);
  if (!singular) singularWords[singularWords.length - 1] = singularOf(words[words.length - 1]);
  const pascal = (parts: string[]) => parts.map((w) => w[0].toUpperCase() + w.slice(1)).join('');
  const Plural = pascal(words);
  const Singular = pascal(singularWords);
  if (Plural === Singular) {
    throw new Error(`"${name}" has no distinct singular: pass one with --singular <name>`);
  }
  return {
    Plural,
    Singular,
    camel: Plural[0].toLowerCase() + Plural.slice(1),
    kebab: words.join('-'),
    singularKebab: singularWords.join('-'),
    snake: words.join('_'),
    CONST: words.join('_').toUpperCase(),
    words: words.join(' '),
  };
}

/** English plurals the usual way (`activities`, `addresses`, `events`); others need --singular. */
function singularOf(word: string): string {
  if (/[^aeiou]ies$/.test(word)) return `${word.slice(0, -3)}y`;
  if (/(ss|x|ch|sh)es$/.test(word)) return word.slice(0, -2);
  if (/[^s]s$/.test(word)) return word.slice(0, -1);
  return word;
}

export interface GenerateOptions {
  name: string;
  singular?: string;
  /** The project's root folder (the one holding src/ and test/). */
  out: string;
  /** The migration's timestamp (ms); now by default. */
  timestamp?: number;
}

export interface GenerateResult {
  names: ListingNames;
  /** Every file written, relative to `out`. */
  written: string[];
  /** Whether the migration was added to src/database/migrations/index.ts. */
  registeredMigration: boolean;
  /** What the developer does next, one step a line. */
  nextSteps: string[];
}

const TEMPLATES = join(__dirname, 'templates');
/** A file of this project (src/cli or dist/cli), whose Prettier configuration formats the output. */
const PROJECT_FILE = join(__dirname, '..', '..', '..', 'package.json');

/** The file that already creates `table` (a migration, or a test module's own table), if any. */
function tableCreatedBy(out: string, table: string): string | undefined {
  const creates = new RegExp(`new Table\\(\\{\\s*name: '${table}'`);
  for (const folder of [join('src', 'database', 'migrations'), join('test', 'extension')]) {
    if (!existsSync(join(out, folder))) continue;
    const files = readdirSync(join(out, folder), { recursive: true, encoding: 'utf8' });
    const found = files.find(
      (file) => file.endsWith('.ts') && creates.test(readFileSync(join(out, folder, file), 'utf8')),
    );
    if (found) return join(folder, found);
  }
  return undefined;
}

/**
 * Writes a listing module's skeleton from the templates: a module that compiles and passes its
 * e2e test as it is, with a `name` column to replace by the real ones (the TODOs say where).
 * Formatted with the project's Prettier (a dev dependency: the generator is a dev tool).
 */
export async function generateListing(options: GenerateOptions): Promise<GenerateResult> {
  const names = listingNames(options.name, options.singular);
  const timestamp = String(options.timestamp ?? Date.now());
  const moduleDir = join('src', names.kebab);
  const migrationName = `${timestamp}-create-${names.kebab}`;
  const files: [template: string, target: string][] = [
    ['listing.ts', join(moduleDir, `${names.kebab}.listing.ts`)],
    ['entity.ts', join(moduleDir, `${names.singularKebab}.entity.ts`)],
    ['view.ts', join(moduleDir, 'dto', `${names.singularKebab}.view.ts`)],
    ['query.dto.ts', join(moduleDir, 'dto', `list-${names.kebab}-query.dto.ts`)],
    ['repository.ts', join(moduleDir, `${names.kebab}.repository.ts`)],
    ['service.ts', join(moduleDir, `${names.kebab}.service.ts`)],
    ['controller.ts', join(moduleDir, `${names.kebab}.controller.ts`)],
    ['module.ts', join(moduleDir, `${names.kebab}.module.ts`)],
    ['migration.ts', join('src', 'database', 'migrations', `${migrationName}.ts`)],
    ['e2e-spec.ts', join('test', 'e2e', `${names.kebab}.e2e-spec.ts`)],
  ];
  // Never overwrite: a second run would throw away the developer's columns.
  const taken = [moduleDir, files[files.length - 1][1]].filter((path) =>
    existsSync(join(options.out, path)),
  );
  if (taken.length > 0) throw new Error(`already there, not overwritten: ${taken.join(', ')}`);
  const creator = tableCreatedBy(options.out, names.snake);
  if (creator?.startsWith(join('test', 'extension'))) {
    throw new Error(
      `${names.snake} is the name of a test listing (${creator}), whose table and route the ` +
        'extension tests create beside the app: choose another name',
    );
  }
  if (creator) {
    throw new Error(
      `a table ${names.snake} is already created by ${creator}: choose another name, or list it ` +
        'as docs/adding-a-listing-module.md says for a table that already exists',
    );
  }

  const values: Record<string, string> = { ...names, timestamp };
  for (const [template, target] of files) {
    const text = readFileSync(join(TEMPLATES, `${template}.tmpl`), 'utf8').replace(
      /__([A-Za-z]+)__/g,
      (token, key: string) => {
        if (!(key in values)) throw new Error(`template ${template}: unknown token ${token}`);
        return values[key];
      },
    );
    mkdirSync(dirname(join(options.out, target)), { recursive: true });
    writeFileSync(join(options.out, target), await formatted(join(options.out, target), text));
  }

  const migrationClass = `Create${names.Plural}${timestamp}`;
  const registeredMigration = registerMigration(options.out, migrationClass, migrationName);
  const moduleImport = `import { ${names.Plural}Module } from './${names.kebab}/${names.kebab}.module';`;
  const nextSteps = [
    `Replace the example column \`name\` by the real ones (the TODOs): the migration, ${names.singularKebab}.entity.ts, the definition in ${names.kebab}.listing.ts, the DTO's filters, the view, the repository's itemQuery and toItem, and the rows the e2e test inserts.`,
    ...(registeredMigration
      ? []
      : [
          `Register ${migrationClass} in src/database/migrations/index.ts (import it and append it to \`migrations\`).`,
        ]),
    `Register the module in src/app.module.ts: \`${moduleImport}\` and \`${names.Plural}Module\` in the imports of AppModule.forRoot.`,
    `Optionally add ${names.Singular} to \`entities\` in src/database/data-source-options.ts (TypeORM metadata only).`,
    `Run its test: npx jest test/e2e/${names.kebab}.e2e-spec.ts (and with DB_TEST_TARGET=mysql DATABASE_URL=...).`,
    'Then npm run openapi && npm run client:generate, and commit the regenerated files.',
  ];
  return {
    names,
    written: files.map(([, target]) => target),
    registeredMigration,
    nextSteps,
  };
}

/**
 * The project's own Prettier style, so that names of any length give lint-clean files: this
 * project's, also for files written into another root (`--out /tmp/gen`), which has none.
 */
async function formatted(path: string, text: string): Promise<string> {
  const prettier = await import('prettier');
  const config =
    (await prettier.resolveConfig(path)) ?? (await prettier.resolveConfig(PROJECT_FILE));
  return prettier.format(text, { ...config, filepath: path });
}

/** Adds the migration to the ordered list in migrations/index.ts; false when there is none. */
function registerMigration(out: string, migrationClass: string, fileName: string): boolean {
  const index = join(out, 'src', 'database', 'migrations', 'index.ts');
  if (!existsSync(index)) return false;
  const text = readFileSync(index, 'utf8');
  const list = /(export const migrations = \[\n[\s\S]*?)(\];)/;
  // The end of the last import statement (one line or several).
  const imports = [...text.matchAll(/^.*from '[^']+';\n/gm)];
  if (!list.test(text) || imports.length === 0) return false;
  const last = imports[imports.length - 1];
  const importEnd = (last.index ?? 0) + last[0].length;
  const withImport =
    text.slice(0, importEnd) +
    `import { ${migrationClass} } from './${fileName}';\n` +
    text.slice(importEnd);
  writeFileSync(index, withImport.replace(list, `$1  ${migrationClass},\n$2`));
  return true;
}

/** Paths as the developer reads them, from the folder they ran the command in. */
export const shown = (out: string, path: string) => relative(process.cwd(), join(out, path));
