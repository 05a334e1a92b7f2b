import { generateToken } from '../../auth/token-format';
import { redactTokens } from './token-redaction';

describe('redactTokens', () => {
  const token = generateToken();

  it.each([
    [`/v1/users?page=${token}`, '/v1/users?page=lsk_[redacted]'],
    [`/v1/${token}/x`, '/v1/lsk_[redacted]/x'],
    [`${token}=1&${token}`, 'lsk_[redacted]=1&lsk_[redacted]'],
    [`q=${encodeURIComponent(token + '%')}`, 'q=lsk_[redacted]'],
    [`/v1/users/%6Csk_${token.slice(4)}`, '/v1/users/lsk_[redacted]'],
    [`x=lsk%5F${token.slice(4)}`, 'x=lsk_[redacted]'],
    [`x=%6c%73%6b%5f${token.slice(4)}`, 'x=lsk_[redacted]'],
  ])('blanks tokens in %s', (text, expected) => {
    expect(redactTokens(text)).toBe(expected);
  });

  it('leaves text without tokens alone', () => {
    for (const text of ['/v1/users?limit=10', 'lsk_short', 'the lsk_ prefix']) {
      expect(redactTokens(text)).toBe(text);
    }
  });
});
