import { describe, expect, it } from 'vitest';
import type { Backend } from '../types';
import { continueEpisode, endOf, observeRoots, openEpisode, treeShape, type OpenEpisode } from './fold';

const NOW = '2026-12-14T10:00:10.000Z';

function backend(pid: number, blockedBy: number[], extra: Partial<Backend> = {}): Backend {
  return {
    pid,
    applicationName: `app-${pid}`,
    operation: null,
    actor: null,
    user: 'bridge',
    clientAddr: null,
    backendType: 'client backend',
    state: blockedBy.length ? 'active' : 'idle in transaction',
    query: `SELECT ${pid}`,
    xactStart: '2026-12-14T10:00:00.000Z',
    queryStart: null,
    backendStart: '2026-12-14T09:00:00.000Z',
    stateChange: null,
    waitEventType: blockedBy.length ? 'Lock' : null,
    waitEvent: null,
    waitingSince: blockedBy.length ? `2026-12-14T10:00:0${pid % 10}.000Z` : null,
    blockedBy,
    intents: [],
    ...extra,
  };
}

describe('observeRoots', () => {
  it('gives one observation per root, with everyone behind it, started at the earliest wait', () => {
    const obs = observeRoots([backend(1, []), backend(2, [1]), backend(3, [2]), backend(4, []), backend(5, [4]), backend(6, [])], NOW);
    expect(obs.map((o) => [o.key.pid, o.waiters.map((w) => w.pid)])).toEqual([
      [1, [2, 3]],
      [4, [5]],
    ]);
    expect(obs[0].startedAt).toBe('2026-12-14T10:00:02.000Z');
    expect(obs[0].waiters[0].waitedMs).toBe(8000);
    expect(obs[0].tree.tree).toEqual([expect.objectContaining({ pid: 1, waitingBehind: 2 })]);
  });

  it('keeps sessions queued on one row in queue order, however many (pg_blocking_pids names everyone ahead)', () => {
    const queue = [backend(1, [])];
    for (let pid = 2; pid <= 41; pid++) queue.push(backend(pid, pid === 2 ? [1] : Array.from({ length: pid - 2 }, (_, i) => i + 2)));
    const [obs] = observeRoots(queue, NOW);
    expect(obs.waiters).toHaveLength(40);
    expect(obs.tree.tree[0].children.map((c) => c.pid)).toEqual([2]);
    expect(obs.tree.tree[0].children[0].children.map((c) => c.pid)).toEqual([3]);
  });

  it('skips a root whose backend start is unknown: it cannot be told apart from a reused pid', () => {
    expect(observeRoots([backend(1, [], { backendStart: null }), backend(2, [1])], NOW)).toEqual([]);
  });
});

describe('continueEpisode', () => {
  it('keeps each wait once, raises the peak, and writes a sample only when the shape changed', () => {
    const [first] = observeRoots([backend(1, []), backend(2, [1])], NOW);
    const opened = openEpisode(first, [], NOW);
    const open: OpenEpisode = { id: '7', ...opened, lastShape: treeShape(first.tree) };
    const same = continueEpisode(open, first, [], '2026-12-14T10:00:11.000Z');
    expect(same.sample).toBeNull();
    expect(same.peak).toBeNull();
    expect(same.waiters).toHaveLength(1);
    const [more] = observeRoots([backend(1, []), backend(2, [1]), backend(3, [1])], '2026-12-14T10:00:12.000Z');
    const grown = continueEpisode(open, more, [{ lockType: 'tuple', mode: 'ExclusiveLock', relation: 'intents', granted: false }], '2026-12-14T10:00:12.000Z');
    expect(grown.peak?.waiters).toBe(2);
    expect(grown.sample?.waiters).toBe(2);
    expect(grown.waiters.map((w) => w.pid)).toEqual([2, 3]);
    expect(grown.waiters[0].firstSeenAt).toBe(NOW);
    expect(grown.locks).toHaveLength(1);
  });
});

describe('endOf', () => {
  it('is the middle of the last gap, or the last sighting after a long one', () => {
    expect(endOf('2026-12-14T10:00:00.000Z', '2026-12-14T10:00:01.000Z', 1000)).toBe('2026-12-14T10:00:00.500Z');
    expect(endOf('2026-12-14T10:00:00.000Z', '2026-12-14T10:00:30.000Z', 1000)).toBe('2026-12-14T10:00:00.000Z');
  });
});
