import { parseProcStat, stealPercent } from '../bench/host-cpu';

describe("the bench's reading of the host's stolen CPU time", () => {
  const stat = (user: number, idle: number, steal: number) =>
    `cpu  ${user} 0 100 ${idle} 10 0 5 ${steal} 40 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1 2\n`;

  it('sums the first eight fields of the cpu line (guest time is already in user)', () => {
    expect(parseProcStat(stat(1000, 500, 200))).toEqual({
      total: 1000 + 100 + 500 + 10 + 5 + 200,
      steal: 200,
    });
  });

  it('reports the stolen share of the time between two readings', () => {
    const before = parseProcStat(stat(1000, 500, 200));
    const after = parseProcStat(stat(1600, 700, 400));
    // 600 user + 200 idle + 200 steal elapsed: a fifth stolen.
    expect(stealPercent(before, after)).toBeCloseTo(20);
  });

  it('has no figure without readings or without elapsed time', () => {
    const reading = parseProcStat(stat(1000, 500, 200));
    expect(stealPercent(undefined, reading)).toBeUndefined();
    expect(stealPercent(reading, reading)).toBeUndefined();
    expect(parseProcStat('intr 1 2\n')).toBeUndefined();
    expect(parseProcStat('cpu  1 2 3\n')).toBeUndefined();
  });
});
