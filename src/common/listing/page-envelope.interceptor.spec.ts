import { Page } from './page';
import { linkHeader, toEnvelope } from './page-envelope.interceptor';

describe('page envelope', () => {
  it('computes page_count as ceil(total / limit), 0 when empty', () => {
    expect(toEnvelope(new Page([], 1, 20, 0)).pagination).toEqual({
      current_page: 1,
      limit: 20,
      page_count: 0,
    });
    expect(new Page([], 1, 20, 41).pageCount).toBe(3);
    expect(new Page([], 1, 20, 40).pageCount).toBe(2);
  });

  it('links first, prev, next and last, keeping the other parameters', () => {
    const link = linkHeader(
      '/v1/users?limit=10&q=ad%20a&page=3',
      new Page([], 3, 10, 95, 'W251bGwsMzAsMzBd.sig'),
    );
    expect(link.split(', ')).toEqual([
      '</v1/users?limit=10&q=ad+a&page=1>; rel="first"',
      '</v1/users?limit=10&q=ad+a&page=2>; rel="prev"',
      '</v1/users?limit=10&q=ad+a&cursor=W251bGwsMzAsMzBd.sig>; rel="next"',
      '</v1/users?limit=10&q=ad+a&page=10>; rel="last"',
    ]);
  });

  it('keeps a query that holds a second `?` whole (`q=zed?`)', () => {
    const link = linkHeader('/v1/users?q=zed?&limit=2', new Page([], 1, 2, 3, 'c.sig'));
    expect(link.split(', ')).toEqual([
      '</v1/users?q=zed%3F&limit=2&page=1>; rel="first"',
      '</v1/users?q=zed%3F&limit=2&cursor=c.sig>; rel="next"',
      '</v1/users?q=zed%3F&limit=2&page=2>; rel="last"',
    ]);
  });

  it('has no next where the walk has ended, whatever page_count says (a total may be stale)', () => {
    const link = linkHeader('/v1/users?limit=10&page=3', new Page([], 3, 10, 95));
    expect(link).toContain('rel="last"');
    expect(link).not.toContain('rel="next"');
  });

  it('points prev of a page past the end at the last page, and has no next', () => {
    const link = linkHeader('/v1/users?page=50', new Page([], 50, 20, 45));
    expect(link).toContain('page=3>; rel="prev"');
    expect(link).not.toContain('rel="next"');
  });

  it('gives no links when nothing matches', () => {
    expect(linkHeader('/v1/users', new Page([], 1, 20, 0))).toBe('');
  });
});
