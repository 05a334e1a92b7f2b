import { loginActivitiesListing } from '../../login-activities/login-activities.listing';
import { usersListing } from '../../users/users.listing';
import { choosePlan, RowEstimates } from './listing-planner';

const bound = (equals: string[], ranges: string[] = []) => ({
  equals: new Set(equals),
  ranges: new Set(ranges),
});

/** Estimates from a table of rows per equality column, taken as independent. */
function estimates(table: number, share: Record<string, number>, all: string[]): RowEstimates {
  const rows = (columns: readonly string[]) =>
    columns.reduce((n, column) => n * (share[column] ?? 1), table);
  return { rows: (equals, ranges) => rows([...equals, ...ranges]), matches: rows(all) };
}

describe('choosePlan', () => {
  const paths = loginActivitiesListing.indexes;

  it('walks the sort’s index when the filters match many of its rows', () => {
    const share = { success: 0.2, otp_required: 0.3 };
    const plan = choosePlan(
      paths,
      bound(['success', 'otp_required']),
      'created_at',
      20,
      estimates(5_000_000, share, ['success', 'otp_required']),
    );
    expect(plan).toMatchObject({ kind: 'walk', index: 'ix_login_activities_success_created_at' });
    expect(plan.cost).toBeLessThan(1000);
  });

  it('walks a selective filter’s own index, which holds few rows, at any depth', () => {
    const share = { authentication_method: 0.05, failure_reason: 0.0001 };
    const all = ['authentication_method', 'failure_reason'];
    const deep = choosePlan(paths, bound(all), 'created_at', 40_000, estimates(5e6, share, all));
    expect(deep).toMatchObject({
      kind: 'walk',
      index: 'ix_login_activities_failure_reason_created_at',
      cost: 500,
    });
  });

  it('reads and sorts the matches of a selective index that is not in the sort’s order', () => {
    const plan = choosePlan(
      paths,
      bound(['session_id']),
      'created_at',
      20,
      estimates(5e6, { session_id: 1e-6 }, ['session_id']),
    );
    expect(plan).toMatchObject({ kind: 'sort', index: 'ix_login_activities_session_id' });
    // Cheaper than the walk is expected to be: no walk is tried first.
    expect(plan.trial).toBeUndefined();
  });

  it('walks a role’s own index in updated_at order to a middle page', () => {
    // 2M users, a role of 100k: the middle page is 50k rows into it.
    const byRole = estimates(2_000_000, { role_id: 0.05 }, ['role_id']);
    const middle = choosePlan(
      usersListing.indexes,
      bound(['role_id']),
      'updated_at',
      50_000,
      byRole,
    );
    expect(middle).toMatchObject({ kind: 'walk', index: 'ix_users_role_updated_at' });
    expect(middle.cost).toBeLessThanOrEqual(2500);
  });

  it('counts through the most selective index, whatever the sort', () => {
    const share = { success: 0.2, ip_address: 0.00001 };
    const all = ['success', 'ip_address'];
    const plan = choosePlan(paths, bound(all), 'id', 20, estimates(5e6, share, all));
    expect(plan.countIndex).toMatch(/^ix_login_activities_ip_address/);
  });

  it('sorts a window’s few matches rather than walk another time’s index they may lie at the end of', () => {
    const windowed = (bracketed: string[] = []) => ({
      ...bound([], ['created_at']),
      windows: new Set(['created_at']),
      bracketed: new Set(bracketed),
      timeOrders: new Set(['id', 'created_at', 'updated_at']),
    });
    const rows = estimates(200_000, { created_at: 0.04 }, ['created_at']);
    // Taken as independent, the walk of updated_at would read 500 entries; at worst it reads all.
    const small = choosePlan(usersListing.indexes, windowed(), 'updated_at', 20, rows);
    // Its index carries updated_at: the matches are sorted without reading a row.
    expect(small).toMatchObject({ kind: 'sort', index: 'ix_users_created_at_cover', cost: 2_000 });
    // A window matching too many rows to sort safely is walked.
    const many = estimates(5_000_000, { created_at: 0.5 }, ['created_at']);
    const large = choosePlan(usersListing.indexes, windowed(), 'updated_at', 20, many);
    expect(large.kind).toBe('walk');
    // A window matching most rows is walked, in id order too: at worst the walk passes the rows it
    // does not match (8k of 200k here) before the page, where sorting would read 192k entries.
    const most = estimates(200_000, { created_at: 0.96 }, ['created_at']);
    for (const sort of ['id', 'updated_at']) {
      const plan = choosePlan(usersListing.indexes, windowed(), sort, 20, most);
      expect(plan.kind).toBe('walk');
      expect(plan.cost).toBeLessThan(100);
    }
    // A sixth of the rows: sorting reads 35k entries, where the walk may pass 165k.
    const sixth = estimates(200_000, { created_at: 0.175 }, ['created_at']);
    expect(choosePlan(usersListing.indexes, windowed(), 'updated_at', 20, sixth)).toMatchObject({
      kind: 'sort',
      index: 'ix_users_created_at_cover',
    });
    // Too many to sort whole (it spills), but page 1 keeps only its top rows: the window's 353k of 2M users
    // updated lately (created lately too, at the far end of a walk) are read, not 1.6M passed.
    const updated = { ...windowed(), windows: new Set(['updated_at']) };
    updated.ranges = new Set(['updated_at']);
    const lately = estimates(2_000_000, { updated_at: 0.1766 }, ['updated_at']);
    for (const [sort, index] of [
      ['id', 'ix_users_updated_at'], // which carries the id
      ['created_at', 'ix_users_updated_at_cover'],
    ]) {
      expect(choosePlan(usersListing.indexes, updated, sort, 20, lately)).toMatchObject({
        kind: 'sort',
        index,
        // The walk is tried first on √(20 × 2M) entries: where matches spread, they hold the page.
        trial: { entries: 6325 },
      });
    }
    // Here too: √(20 × 200k) entries, against the sort's 35k.
    expect(choosePlan(usersListing.indexes, windowed(), 'updated_at', 20, sixth).trial).toEqual({
      index: 'ix_users_updated_at_cover',
      entries: 2000,
    });
    // Past the walk's first 1000 rows, the sort runs alone.
    const deep = choosePlan(usersListing.indexes, windowed(), 'updated_at', 2000, sixth);
    expect(deep).toMatchObject({ kind: 'sort' });
    expect(deep.trial).toBeUndefined();
    // A walk bound brings the walk to the window's stretch: it is walked.
    const reached = { ...updated, reached: new Set(['updated_at']) };
    for (const sort of ['id', 'created_at']) {
      expect(choosePlan(usersListing.indexes, reached, sort, 20, lately).kind).toBe('walk');
    }
    // Implied id bounds bring a walk in id order to the window: it is walked.
    const id = choosePlan(usersListing.indexes, windowed(['created_at']), 'id', 20, rows);
    expect(id.kind).toBe('walk');
    // Names do not follow time: taken as independent of the window, their walk reads 500 entries,
    // checked inside the index that carries created_at.
    const name = choosePlan(usersListing.indexes, windowed(), 'name', 20, rows);
    expect(name).toMatchObject({ kind: 'walk', index: 'ix_users_name_cover' });
  });

  it('walks the index that carries a filter rather than sort rows read for it', () => {
    // `q` at 2M users: 50k matches. Page 1 walks the created_at index that carries name and
    // e-mail, its entries checked without reading a row; a deep page sorts the matches read from
    // the name and e-mail indexes, which carry created_at (no row read either).
    const q = bound([], ['(name or email)']);
    const rows = estimates(2_000_000, { '(name or email)': 0.025 }, ['(name or email)']);
    expect(choosePlan(usersListing.indexes, q, 'created_at', 20, rows)).toMatchObject({
      kind: 'walk',
      index: 'ix_users_created_at_cover',
    });
    expect(choosePlan(usersListing.indexes, q, 'created_at', 25_000, rows)).toMatchObject({
      kind: 'sort',
      index: 'ix_users_name_cover,ix_users_email_cover',
      cost: 12_500,
    });
    // Unfiltered, the narrow index walks the same order at a quarter of the width.
    expect(
      choosePlan(usersListing.indexes, bound([]), 'name', 1_000_000, estimates(2e6, {}, [])),
    ).toMatchObject({ kind: 'walk', index: 'ix_users_name' });
  });

  it('always has a plan: a time window sorted by name is a walk of the name index or a sort', () => {
    const plan = choosePlan(
      usersListing.indexes,
      bound([], ['created_at', '(name or email)']),
      'name',
      20,
      estimates(200_000, { created_at: 0.01, '(name or email)': 0.01 }, ['created_at']),
    );
    expect(['walk', 'sort']).toContain(plan.kind);
    expect(plan.index).toBeDefined();
  });
});
