import { parseLinks, startTestApp, TestApp } from '../kit';

/**
 * A cursor carries the last row's sort value: the longest a column holds (255 characters of a
 * name, each escaped in JSON or several bytes in UTF-8) still makes a `next` link the service takes.
 */
describe('walks by the longest sort values', () => {
  let kit: TestApp;

  beforeAll(async () => {
    kit = await startTestApp();
  });
  afterAll(() => kit.close());

  it('follows next by name through names of 255 escaped or multi-byte characters', async () => {
    const names = ['"Я', '\\Ж', '"字'].map((pair) => pair.repeat(127) + 'x');
    const created = [];
    for (const name of names) created.push(await kit.data.user({ name }));
    const token = await kit.token();
    const seen: number[] = [];
    let next: string | undefined = '/v1/users?sort=-name&limit=1';
    while (next) {
      const response: { body: { data: { id: number }[] }; headers: Record<string, string> } =
        await kit.as(token).get(next).expect(200);
      seen.push(...response.body.data.map((user) => user.id));
      next = parseLinks(response.headers.link).next;
    }
    // Each once, whatever order the database's collation gives these names.
    expect(seen).toHaveLength(created.length);
    expect([...seen].sort()).toEqual(created.map((user) => user.id).sort());
  });

  it('keeps the sort value a cursor carries unreadable (an e-mail in URLs and logs)', async () => {
    const user = await kit.data.user({ email: 'cursor.reader@example.test' });
    const token = await kit.token();
    const first = await kit.as(token).get('/v1/users?sort=email&limit=1').expect(200);
    expect(first.body.data[0].id).toBe(user.id);
    const next = parseLinks(first.headers.link).next;
    const cursor = new URL(next, 'http://x').searchParams.get('cursor')!;
    const decoded = cursor
      .split('.')
      .map((part) => Buffer.from(part, 'base64url').toString('latin1'))
      .join(' ');
    expect(decoded).not.toContain('cursor.reader');
    // And it still leads on.
    await kit.as(token).get(next).expect(200);
  });
});
