import { describe, expect, it } from 'vitest';
import { coversMoment, layoutStrip, treeAt, waiterLevel } from './strip';

const T = (s: number) => new Date(Date.UTC(2026, 11, 14, 10, 0, s)).toISOString();
const ep = (id: string, from: number, to: number | null, peakWaiters = 1) => ({ id, startedAt: T(from), endedAt: to === null ? null : T(to), lastSeenAt: T(to ?? 50), peakWaiters });

describe('layoutStrip', () => {
  it('places bars by time and stacks overlapping ones in lanes', () => {
    const from = Date.parse(T(0));
    const { bars, lanes } = layoutStrip([ep('a', 0, 10), ep('b', 5, 20), ep('c', 30, 40)], from, from + 100_000);
    expect(lanes).toBe(2);
    expect(bars.map((b) => [b.id, b.lane])).toEqual([['a', 0], ['b', 1], ['c', 0]]);
    expect(bars[0].x).toBe(0);
    expect(bars[0].width).toBeCloseTo(0.1);
  });
});

describe('scrubbing', () => {
  it('knows which episodes were going on, and the tree of the last sample before the moment', () => {
    expect(coversMoment(ep('a', 0, 10), Date.parse(T(5)))).toBe(true);
    expect(coversMoment(ep('a', 0, 10), Date.parse(T(11)))).toBe(false);
    const tree = { tree: [], backends: [] };
    const samples = [{ at: T(0), tree, n: 1 }, { at: T(4), tree, n: 2 }, { at: T(8), tree, n: 3 }];
    expect(treeAt(samples, Date.parse(T(5)))?.n).toBe(2);
    expect(treeAt(samples, Date.parse(T(9)))?.n).toBe(3);
    expect(waiterLevel(1)).toBe(0);
    expect(waiterLevel(25)).toBe(3);
  });
});
