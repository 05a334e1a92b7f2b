import { listingNames } from './generate-listing';

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
