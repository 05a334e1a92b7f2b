import { MalformedEncoding, parseQuery } from './strict-query';

describe('parseQuery', () => {
  it('decodes names and values as UTF-8, + as a space, a repeated name as a list', () => {
    const query = parseQuery('q=Zo%C3%AB+K&page=1&page=2&flag&=x&&sort=-name');
    expect({ ...query }).toEqual({
      q: 'Zoë K',
      page: ['1', '2'],
      flag: '',
      '': 'x',
      sort: '-name',
    });
    expect(Object.getPrototypeOf(query)).toBeNull();
  });

  it.each([
    ['q=50%', 'q'],
    ['q=ad%zz', 'q'],
    ['q=ab%E0%A4%A', 'q'],
    ['q=%FF', 'q'],
    ['q=%ED%A0%80', 'q'],
    ['q=%C0%AE', 'q'],
    ['x%FF=1', 'x%FF'],
  ])('marks %s, which is not percent-encoded UTF-8, under %s', (text, name) => {
    const query = parseQuery(text);
    expect(query[name]).toBeInstanceOf(MalformedEncoding);
  });

  it('keeps every repeat of a name, in order', () => {
    const query = parseQuery(Array.from({ length: 1000 }, (_, i) => `a=${i}`).join('&'));
    expect(query.a).toHaveLength(1000);
    expect((query.a as string[]).slice(-2)).toEqual(['998', '999']);
  });

  it('reads at most 1,000 parameters, as the querystring module does', () => {
    const query = parseQuery(Array.from({ length: 1500 }, (_, i) => `p${i}=%FF`).join('&'));
    expect(Object.keys(query)).toHaveLength(1000);
    expect(query.p999).toBeInstanceOf(MalformedEncoding);
  });

  it('reads no query (null, as Express gives it) as no parameter', () => {
    expect({ ...parseQuery(null) }).toEqual({});
  });

  it('keeps __proto__ a parameter like any other', () => {
    const query = parseQuery('__proto__=1&constructor=2');
    expect(Object.keys(query)).toEqual(['__proto__', 'constructor']);
  });
});
