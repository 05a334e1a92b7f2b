import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateListing, listingNames } from './generate-listing';

describe('listingNames', () => {
  it('spells one name every way the module needs it', () => {
    expect(listingNames('audit-events')).toEqual({
      Plural: 'AuditEvents',
      Singular: 'AuditEvent',
      camel: 'auditEvents',
      kebab: 'audit-events',
      singularKebab: 'audit-event',
      snake: 'audit_events',
      CONST: 'AUDIT_EVENTS',
      words: 'audit events',
    });
    expect(listingNames('login_activities')).toMatchObject({
      Singular: 'LoginActivity',
      kebab: 'login-activities',
      snake: 'login_activities',
    });
  });

  it('makes regular singulars and takes an irregular one when given', () => {
    expect(listingNames('delivery-addresses').singularKebab).toBe('delivery-address');
    expect(listingNames('invoice-boxes').Singular).toBe('InvoiceBox');
    expect(listingNames('days').Singular).toBe('Day');
    expect(() => listingNames('people')).toThrow('--singular');
    expect(listingNames('people', 'person')).toMatchObject({
      Plural: 'People',
      Singular: 'Person',
    });
  });

  it('refuses names that are not lower-case words', () => {
    for (const name of ['Audit-Events', 'audit events', '-events', 'events-', '1events', '']) {
      expect(() => listingNames(name)).toThrow('is not a listing name');
    }
  });
});

describe('generateListing', () => {
  it('refuses a name whose table the project already creates, writing nothing', async () => {
    const out = mkdtempSync(join(tmpdir(), 'listing-names-'));
    try {
      const extension = join(out, 'test', 'extension', 'audit-events');
      mkdirSync(extension, { recursive: true });
      writeFileSync(
        join(extension, 'audit-events.table.ts'),
        "runner.createTable(\n  new Table({\n    name: 'audit_events',\n  }),\n);\n",
      );
      await expect(generateListing({ name: 'audit-events', out })).rejects.toThrow(
        'audit_events is the name of a test listing (test/extension/audit-events/audit-events.table.ts), whose table and route the extension tests create beside the app: choose another name',
      );
      expect(existsSync(join(out, 'src'))).toBe(false);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});
