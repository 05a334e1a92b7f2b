import { eventually, startTestApp, TestApp } from '../kit';

const CACHE_TTL_MS = 200;
/** The README's promise: a revocation takes effect within TOKEN_CACHE_TTL_MS; generous slack here. */
const BOUND_MS = CACHE_TTL_MS + 3000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Calls `probe` until it answers `status`; the elapsed time, or a failure past `boundMs`. */
async function pollUntilStatus(probe: () => Promise<{ status: number }>, status: number) {
  const started = Date.now();
  for (;;) {
    const response = await probe();
    if (response.status === status) return Date.now() - started;
    if (Date.now() - started > BOUND_MS) {
      throw new Error(`still ${response.status} after ${BOUND_MS} ms, expected ${status}`);
    }
    await sleep(25);
  }
}

/** What the cases ask of an app: a listing request with a token, and a token's last_used_at. */
function tokenUses(kit: TestApp) {
  return {
    get: (token: string) => kit.http().get('/v1/users').set('Authorization', `Bearer ${token}`),
    lastUsedAt: async (id: number): Promise<string | null> => {
      const [row] = await kit.dataSource.query('SELECT last_used_at FROM api_tokens WHERE id = ?', [
        id,
      ]);
      return row.last_used_at === null ? null : String(row.last_used_at);
    },
  };
}

/**
 * Makes the database refuse updates of api_tokens (of the row `id` alone, given one), as a lock
 * held past its limit or a user that may not write would; what it returns lifts that.
 */
async function refuseLastUseWrites(kit: TestApp, id?: number): Promise<() => Promise<unknown>> {
  const refused = id === undefined ? '1 = 1' : `OLD.id = ${id}`;
  await kit.dataSource.query(
    kit.dataSource.options.type === 'mysql'
      ? `CREATE TRIGGER refuse_last_use BEFORE UPDATE ON api_tokens FOR EACH ROW BEGIN IF ${refused} THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'refused'; END IF; END`
      : `CREATE TRIGGER refuse_last_use BEFORE UPDATE ON api_tokens WHEN ${refused} BEGIN SELECT RAISE(ABORT, 'refused'); END`,
  );
  return () => kit.dataSource.query('DROP TRIGGER refuse_last_use');
}

describe('token lifecycle', () => {
  let kit: TestApp;

  beforeAll(async () => {
    kit = await startTestApp({
      env: { TOKEN_CACHE_TTL_MS: String(CACHE_TTL_MS) },
      captureLogs: true,
    });
  });
  afterAll(() => kit.close());

  const get = (token: string) => tokenUses(kit).get(token);
  const lastUsedAt = (id: number) => tokenUses(kit).lastUsedAt(id);
  /** `last_used_at` once written (off the request path: shortly after the reply), or null. */
  const writtenLastUse = (id: number) =>
    eventually(
      () => lastUsedAt(id),
      (value) => value !== null,
    );

  it('stops accepting a token revoked while its look-up is cached, within the cache time', async () => {
    const { id, token } = await kit.tokenWithId();
    await get(token).expect(200); // now cached as valid
    await kit.dataSource.query('UPDATE api_tokens SET revoked_at = ? WHERE id = ?', [
      '2026-01-01 00:00:00.000',
      id,
    ]);
    await pollUntilStatus(() => get(token), 401);
    const response = await get(token).expect(401);
    expect(response.headers['www-authenticate']).toBe('Bearer realm="api", error="invalid_token"');
  });

  it('stops accepting a token at its expiry even while its look-up is cached', async () => {
    const token = await kit.token({ expiresInMs: 600 });
    await get(token).expect(200);
    await pollUntilStatus(() => get(token), 401);
  });

  it('accepts a token again once an unknown-token answer has expired from the cache', async () => {
    // An unknown token is cached as unknown; a token created later must not stay refused.
    const { id, token } = await kit.tokenWithId();
    await kit.dataSource.query('UPDATE api_tokens SET revoked_at = ? WHERE id = ?', [
      '2026-01-01 00:00:00.000',
      id,
    ]);
    await get(token).expect(401);
    await kit.dataSource.query('UPDATE api_tokens SET revoked_at = NULL WHERE id = ?', [id]);
    await pollUntilStatus(() => get(token), 200);
  });

  it('records last_used_at after the first use, and not again a moment later', async () => {
    const { id, token } = await kit.tokenWithId();
    expect(await lastUsedAt(id)).toBeNull();
    await get(token).expect(200);
    const first = await writtenLastUse(id);
    expect(first).not.toBeNull();

    await sleep(50);
    await get(token).expect(200);
    await get(token).expect(200);
    await sleep(300);
    expect(await lastUsedAt(id)).toBe(first);
  });

  it('records last_used_at at the next use when a write of it failed (a lock held too long)', async () => {
    const { id, token } = await kit.tokenWithId();
    const allow = await refuseLastUseWrites(kit);
    try {
      await get(token).expect(200);
      await sleep(300); // its write has failed
    } finally {
      await allow();
    }
    expect(await lastUsedAt(id)).toBeNull();
    await sleep(1000); // the wait after a first failure
    await get(token).expect(200);
    expect(await writtenLastUse(id)).not.toBeNull();
  });

  it('records a use whose write failed once the database takes it, though the token is not used again', async () => {
    const { id, token } = await kit.tokenWithId();
    const allow = await refuseLastUseWrites(kit);
    try {
      await get(token).expect(200); // its one use, while a writer holds the table
      await sleep(300);
    } finally {
      await allow();
    }
    expect(await lastUsedAt(id)).toBeNull();
    // Written by the retry after its wait (1 s or more: earlier tests' failures double it).
    expect(
      await eventually(
        () => lastUsedAt(id),
        (value) => value !== null,
        20_000,
        100,
      ),
    ).not.toBeNull();
  }, 30_000);

  it('under a database user that may not write it, tries last_used_at after a growing wait and warns once', async () => {
    const { token } = await kit.tokenWithId();
    const warnings = () =>
      kit.logs().filter((line) => /could not record last_used_at/.test(String(line.msg))).length;
    const before = warnings();
    const allow = await refuseLastUseWrites(kit);
    try {
      // 40 uses in over 2 s: tried at the first, a second later, then two more: one warning.
      for (let i = 0; i < 40; i++) {
        await get(token).expect(200);
        await sleep(50);
      }
      expect(warnings() - before).toBe(1);
    } finally {
      await allow();
    }
  });
});

describe("a token's last use written late", () => {
  let kit: TestApp;
  beforeAll(async () => {
    kit = await startTestApp({ captureLogs: true });
  });
  afterAll(() => kit.close());

  const get = (token: string) => tokenUses(kit).get(token);
  const lastUsedAt = (id: number) => tokenUses(kit).lastUsedAt(id);
  const warnings = (id: number) =>
    kit
      .logs()
      .filter((line) =>
        String(line.msg).startsWith(`could not record last_used_at for token ${id}:`),
      ).length;

  it('never takes last_used_at back: a retried use older than one another instance wrote', async () => {
    const { id, token } = await kit.tokenWithId();
    const allow = await refuseLastUseWrites(kit, id);
    try {
      await get(token).expect(200);
      await sleep(300); // its write has failed: tried again after a second
    } finally {
      await allow();
    }
    // Another instance records a later use meanwhile.
    const later = new Date(Date.now() + 1000).toISOString().slice(0, 23).replace('T', ' ');
    await kit.dataSource.query('UPDATE api_tokens SET last_used_at = ? WHERE id = ?', [later, id]);
    const written = await lastUsedAt(id);
    await eventually(
      async () => kit.logs().filter((line) => /is recorded again/.test(String(line.msg))).length,
      (count) => count > 0,
      10_000,
      100,
    );
    expect(await lastUsedAt(id)).toBe(written);
  }, 20_000);

  it('warns once of a token whose row refuses its write while other tokens are written', async () => {
    const stuck = await kit.tokenWithId();
    const other = await kit.tokenWithId();
    const allow = await refuseLastUseWrites(kit, stuck.id);
    try {
      // Each token used every 100 ms for 3 s: the other one's uses are written (once a minute).
      for (let i = 0; i < 30; i++) {
        await get(stuck.token).expect(200);
        await get(other.token).expect(200);
        await sleep(100);
      }
      expect(warnings(stuck.id)).toBe(1);
      expect(await lastUsedAt(other.id)).not.toBeNull();
    } finally {
      await allow();
    }
  }, 20_000);
});
