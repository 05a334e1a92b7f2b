import { sortKeys } from '../../src/common/listing/listing-definition';
import {
  AnnouncementsModule,
  announcementsListing,
  createAnnouncementsTable,
} from '../extension/announcements';
import {
  AuditEventsModule,
  auditEventsListing,
  createAuditEventsTable,
} from '../extension/audit-events';
import {
  describeListingContract,
  listingPlans,
  listingSchemaProblems,
  startTestApp,
  TestApp,
} from '../kit';

/**
 * The shared listing contract (test/kit/listing-contract.ts), run against every listing: the two
 * of the service and the audit events a test module adds from outside src. Each file of a module
 * covers only what is its own.
 */
const ids = (rows: { id: number }[]) => rows.map((row) => row.id);

describeListingContract({
  name: 'users',
  path: '/v1/users',
  scope: 'users:read',
  seed: async (kit, count, organizationId) => {
    const role = await kit.data.role();
    return ids(
      await kit.data.many(count, () =>
        kit.data.user({ organization_id: organizationId, role_id: role.id }),
      ),
    );
  },
});

describeListingContract({
  name: 'login activities',
  path: '/v1/login_activities',
  scope: 'login_activities:read',
  seed: async (kit, count, organizationId) => {
    const user = await kit.data.user({ organization_id: organizationId });
    return ids(
      await kit.data.many(count, (i) => kit.data.loginActivity({ user, success: i % 3 !== 0 })),
    );
  },
  // An attempt with an e-mail no user has belongs to no organization.
  seedWithoutOrganization: async (kit, count) =>
    ids(await kit.data.many(count, () => kit.data.loginActivity({ success: false }))),
});

let auditEvents = 0;
const auditEvent = (kit: TestApp, organizationId: number | null) => {
  auditEvents += 1;
  return kit.data.row('audit_events', {
    organization_id: organizationId,
    actor_id: auditEvents % 2 === 0 ? 7 : null,
    action: 'sign_in',
    created_at: new Date(Date.UTC(2026, 10, 1, 0, 0, auditEvents % 7)),
  });
};

describeListingContract({
  name: 'audit events (a module outside src)',
  path: '/v1/audit_events',
  scope: 'audit_events:read',
  imports: [AuditEventsModule],
  prepare: (kit) => createAuditEventsTable(kit.dataSource),
  seed: (kit, count, organizationId) => kit.data.many(count, () => auditEvent(kit, organizationId)),
  seedWithoutOrganization: (kit, count) => kit.data.many(count, () => auditEvent(kit, null)),
});

let announcements = 0;
describeListingContract({
  name: 'announcements (rows no organization owns)',
  path: '/v1/announcements',
  scope: 'announcements:read',
  imports: [AnnouncementsModule],
  prepare: (kit) => createAnnouncementsTable(kit.dataSource),
  shared: true,
  seed: (kit, count) =>
    kit.data.many(count, () => {
      announcements += 1;
      return kit.data.row('announcements', {
        title: `Notice ${announcements}`,
        created_at: new Date(Date.UTC(2026, 10, 1, 0, 0, announcements % 5)),
        updated_at: new Date(Date.UTC(2026, 10, 2, 0, 0, announcements % 3)),
      });
    }),
});

// A changing timestamp with an index of its own, (updated_at, id), as the guide has one made: its
// hourly histogram reads that index alone (a scan of the table on MySQL/MariaDB before).
describe('announcements: plans, with changedAt on an index that carries nothing else', () => {
  let kit: TestApp;
  let organizationId: number;
  beforeAll(async () => {
    kit = await startTestApp({
      imports: [AnnouncementsModule],
      env: { COUNT_CACHE_WARMUP: 'false' },
    });
    await createAnnouncementsTable(kit.dataSource);
    organizationId = (await kit.data.organization()).id;
    const start = Date.UTC(2026, 0, 1);
    await kit.data.rows('announcements', 3000, (i) => ({
      title: `Notice ${i % 50}`,
      created_at: new Date(start + i * 60_000),
      updated_at: new Date(start + i * 60_000 + (i % 13) * 3_600_000),
    }));
  }, 60_000);
  afterAll(() => kit?.close());

  it('reads through the chosen index, walking it in order or sorting its matches', async () => {
    const filters = {
      created_from: '2026-01-02T00:00:00Z',
      updated_from: '2026-01-02T06:00:00Z',
    };
    const { problems } = await listingPlans(kit).checkAll(
      '/v1/announcements',
      filters,
      sortKeys(announcementsListing),
      organizationId,
      announcementsListing.indexes,
    );
    expect(problems).toEqual([]);
  }, 120_000);
});

describe('the listing contract finds a schema that does not serve a definition', () => {
  let kit: TestApp;
  beforeAll(async () => {
    kit = await startTestApp({ imports: [AuditEventsModule] });
    await createAuditEventsTable(kit.dataSource);
  });
  afterAll(() => kit?.close());

  it('names a sort column that may be NULL, text compared where case matters, and an index the table lacks', async () => {
    const mysql = kit.dataSource.options.type === 'mysql';
    if (mysql) {
      await kit.dataSource.query(
        'ALTER TABLE audit_events MODIFY action VARCHAR(64) NOT NULL COLLATE utf8mb4_bin',
      );
    }
    const definition = {
      ...auditEventsListing,
      sortableColumns: ['created_at', 'actor_id'],
      // `action` by any text, not one of its few values: compared in the column's collation.
      filters: { ...auditEventsListing.filters, action: { operator: 'equals', column: 'action' } },
      indexes: [...auditEventsListing.indexes, { index: 'ix_missing', equals: [], sort: 'id' }],
    } as const;
    expect(await listingSchemaProblems(kit, definition)).toEqual([
      'audit_events.actor_id: sortable, but may be NULL',
      `audit_events.action: compared as text, but case matters in its collation (${mysql ? 'not _ci' : 'not NOCASE'})`,
      'audit_events: the definition names index ix_missing, which the table lacks',
    ]);
    // As served (`action` one of a few values): nothing lacks.
    expect(await listingSchemaProblems(kit, auditEventsListing)).toEqual([]);
  });
});
