import { HourCells } from './listing-rollup';

const cellsOf = (cells: HourCells, first = -Infinity, end = Infinity) => {
  const seen: number[][] = [];
  cells.forEach(first, end, (hour, rows, firstId, lastId) =>
    seen.push([hour, rows, firstId, lastId]),
  );
  return seen;
};

describe('HourCells', () => {
  it('keeps hours ascending whatever the order they come in, merging an hour added again', () => {
    const cells = new HourCells();
    for (const hour of [10, 12, 11, 30, 5, 20, 25, 1, 12, 40])
      cells.add(hour, 2, hour * 100, hour * 100 + 9);
    cells.add(11, 3, 1_050, 1_200);
    expect(cellsOf(cells)).toEqual([
      [1, 2, 100, 109],
      [5, 2, 500, 509],
      [10, 2, 1_000, 1_009],
      [11, 5, 1_050, 1_200],
      [12, 4, 1_200, 1_209],
      [20, 2, 2_000, 2_009],
      [25, 2, 2_500, 2_509],
      [30, 2, 3_000, 3_009],
      [40, 2, 4_000, 4_009],
    ]);
    expect(cells.rows).toBe(23);
    expect(cells.size).toBe(9);
  });

  it('visits the hours of [first, end) only, and keeps them through a trim and more additions', () => {
    const cells = new HourCells();
    for (let hour = 0; hour < 100; hour++) cells.add(hour, hour, hour, hour);
    cells.trim();
    cells.add(100, 1, 100, 100);
    cells.add(50, 1, 49, 51);
    expect(cellsOf(cells, 49, 52)).toEqual([
      [49, 49, 49, 49],
      [50, 51, 49, 51],
      [51, 51, 51, 51],
    ]);
    expect(cellsOf(cells, 99.5, Infinity)).toEqual([[100, 1, 100, 100]]);
    expect(cellsOf(cells, 101, 200)).toEqual([]);
    expect(cells.rows).toBe(4_950 + 2);
  });
});
