import { startTestApp, TestApp } from '../kit';

describe('the test kit', () => {
  let kit: TestApp;
  beforeAll(async () => (kit = await startTestApp()));
  afterAll(() => kit.close());

  it("shows the reply's problem when a status expectation fails", async () => {
    const api = await kit.client();
    await expect(api.get('/v1/users?role_id=0').expect(200)).rejects.toThrow(
      /expected 200, got 400: .*role_id/,
    );
    await api.get('/v1/users?role_id=0').expect(400);
  });
});
