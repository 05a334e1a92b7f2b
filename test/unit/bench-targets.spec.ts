import { checkTargets, type TargetRow } from '../bench/targets';

const row = (scenario: string, fields: Partial<TargetRow> = {}): TargetRow => ({
  scenario,
  reqPerSec: 1000,
  p99: 40,
  peakRssMiB: 150,
  ...fields,
});

const verdicts = (rows: TargetRow[], scaling?: number) =>
  Object.fromEntries(checkTargets(rows, scaling).map((check) => [check.target, check.met]));

describe("the bench's check of issue 5's targets", () => {
  it('counts a throughput just under half of the reference as not met, though it rounds to 50%', () => {
    const checks = checkTargets([
      row('S1', { reqPerSec: 1604 }),
      row('ref S1', { reqPerSec: 3218 }),
    ]);
    const throughput = checks.find((check) => check.target === 'S1 req/s ≥ 50% of ref');
    expect(throughput).toEqual({
      target: 'S1 req/s ≥ 50% of ref',
      measured: '49.8% (1604 / 3218)',
      met: false,
    });
  });

  it('holds login activities page 1 to 70% of ref and a rejected token to 30% (issue 33)', () => {
    const rows = [
      row('S2', { reqPerSec: 699 }),
      row('ref S2', { reqPerSec: 1000 }),
      row('S4', { reqPerSec: 300 }),
      row('ref S4', { reqPerSec: 1000 }),
    ];
    expect(verdicts(rows)).toMatchObject({
      'S2 req/s ≥ 70% of ref': false,
      'S4 req/s ≥ 30% of ref': true,
    });
    expect(verdicts(rows)).not.toHaveProperty('S4 p99 < 50 ms');
  });

  it('holds p99 to strictly under 50 ms', () => {
    expect(verdicts([row('S1', { p99: 50 }), row('S2', { p99: 49 })])).toMatchObject({
      'S1 p99 < 50 ms': false,
      'S2 p99 < 50 ms': true,
    });
  });

  it('compares deep pages and keyset steps by their sequential medians', () => {
    const rows = [
      row('S3', { sequentialMedianMs: 137.5 }),
      row('ref S3', { reqPerSec: 0, sequentialMedianMs: 1733 }),
      row('K', { sequentialMedianMs: 10 }),
    ];
    expect(verdicts(rows)).toMatchObject({
      "S3 per request ≤ ref's (sequential median)": true,
      'keyset step < 10 ms (sequential median)': false,
    });
  });

  it("reads peak RSS in MB off the app's own rows only, not the yardsticks'", () => {
    // 190 MiB is 199.2 MB; the yardsticks' 300 MiB must not count.
    const rows = [row('S1', { peakRssMiB: 190 }), row('nest S1', { peakRssMiB: 300 })];
    expect(checkTargets(rows).find((check) => check.target === 'peak RSS < 200 MB')).toEqual({
      target: 'peak RSS < 200 MB',
      measured: '199 MB',
      met: true,
    });
    expect(verdicts([row('S1', { peakRssMiB: 191 })])['peak RSS < 200 MB']).toBe(false);
  });

  it('checks the scaling line only when both sizes ran, and ratios only with --reference', () => {
    expect(verdicts([row('S2')], 2.1)).toEqual({
      'S2 p99 < 50 ms': true,
      'S2 p50 large / small ≤ 2': false,
      'peak RSS < 200 MB': true,
      'peak RSS < 256 MB (S2)': true,
    });
  });
});

describe("the bench's check of issue 33's peak RSS", () => {
  it('bounds the highest peak of S1-S5, the export and the matrix under 256 MB', () => {
    const rows = [row('S1', { peakRssMiB: 230 }), row('ref S1', { peakRssMiB: 400 }), row('S5')];
    const bound = (peaks: { name: string; peakRssMiB: number }[]) =>
      checkTargets(rows, undefined, peaks).find((check) =>
        check.target.startsWith('peak RSS < 256'),
      );
    expect(bound([])).toEqual({
      target: 'peak RSS < 256 MB (S1, S5)',
      measured: '241 MB (S1)',
      met: true,
    });
    expect(
      bound([
        { name: 'X1', peakRssMiB: 244.2 },
        { name: 'M', peakRssMiB: 200 },
      ]),
    ).toEqual({
      target: 'peak RSS < 256 MB (S1, S5, X1, M)',
      measured: '256 MB (X1)',
      met: false,
    });
  });
});
