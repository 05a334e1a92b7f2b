import {
  bearerCredentials,
  displayPrefix,
  generateToken,
  hashToken,
  parseDuration,
  presentedToken,
  TOKEN_PATTERN,
} from './token-format';

describe('token format', () => {
  it('generates distinct, recognizable tokens', () => {
    const tokens = new Set(Array.from({ length: 100 }, generateToken));
    expect(tokens.size).toBe(100);
    for (const token of tokens) expect(token).toMatch(TOKEN_PATTERN);
  });

  it('hashes with SHA-256 and shows only a short prefix', () => {
    expect(hashToken('abc')).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    );
    expect(displayPrefix('lsk_abcdefghijk')).toBe('lsk_abcdef');
  });

  it.each([
    ['90s', 90_000],
    ['15m', 900_000],
    ['12h', 43_200_000],
    ['30d', 2_592_000_000],
    ['2w', 1_209_600_000],
  ])('parses %s', (text, ms) => expect(parseDuration(text)).toBe(ms));

  it.each(['', '0d', '30', 'd', '1y', '-1d', '1.5h'])('refuses %j', (text) =>
    expect(parseDuration(text)).toBeNull(),
  );
});

describe('bearer credentials', () => {
  const token = generateToken();

  it.each([
    [`Bearer ${token}`, token, token],
    [`bearer ${token}`, token, token],
    [`Bearer   ${token}`, token, token],
    ['Bearer not-a-token', 'not-a-token', null],
    [`Bearer ${token} extra`, null, null],
    [`Basic ${token}`, null, null],
    ['Bearer', null, null],
    ['', null, null],
    [undefined, null, null],
  ])('%j gives credentials %j and token %j', (header, credentials, presented) => {
    expect(bearerCredentials(header)).toBe(credentials);
    expect(presentedToken(header)).toBe(presented);
  });
});
