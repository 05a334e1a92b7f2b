import { byCodePoint } from './by-code-point';

describe('byCodePoint', () => {
  it('orders by code unit, not by the locale: upper case before lower, equal strings equal', () => {
    expect(['b', 'a', 'B', 'users:read', 'login_activities:read'].sort(byCodePoint)).toEqual([
      'B',
      'a',
      'b',
      'login_activities:read',
      'users:read',
    ]);
    expect(byCodePoint('x', 'x')).toBe(0);
  });
});
