import { describe, expect, it } from 'vitest';
import { buildBlockingTree, DEFAULT_TREE_CAPS, impactOf, parseLabel, resolveIntents, rootBlockers } from './tree';
import type { Backend } from './types';

const A = '11111111-1111-4111-8111-111111111111';
const B = '22222222-2222-4222-8222-222222222222';
const b = (pid: number, blockedBy: number[] = [], applicationName: string | null = null) => ({ pid, blockedBy, applicationName });

function full(pid: number, blockedBy: number[] = [], extra: Partial<Backend> = {}): Backend {
  return {
    pid, blockedBy, applicationName: null, operation: null, actor: null, user: 'postgres', clientAddr: null, backendType: 'client backend',
    state: 'active', query: 'select', xactStart: null, queryStart: null, backendStart: null, stateChange: null, waitEventType: null,
    waitEvent: null, waitingSince: null, intents: [], ...extra,
  };
}

describe('parseLabel', () => {
  it('reads the engine label and nothing else', () => {
    expect(parseLabel(`bridge:update_status:${A}`)).toEqual({ operation: 'update_status', intentId: A });
    expect(parseLabel(`bridge:update_status:${A.toUpperCase()}`)?.intentId).toBe(A);
    expect(parseLabel('bridge:console')).toBeNull();
    expect(parseLabel(`psql ${A}`)).toBeNull();
    expect(parseLabel(null)).toBeNull();
  });
});

describe('blocking tree', () => {
  it('roots at blockers that wait for nobody, most sessions behind them first', () => {
    // 1 ← 2 ← 3, 1 ← 4;  5 ← 6
    const backends = [b(1), b(2, [1]), b(3, [2]), b(4, [1]), b(5), b(6, [5])];
    const { tree, hiddenRoots } = buildBlockingTree(backends);
    expect(hiddenRoots).toBe(0);
    expect(tree.map((n) => [n.pid, n.waitingBehind])).toEqual([[1, 3], [5, 1]]);
    expect(tree[0].children.map((n) => n.pid)).toEqual([2, 4]);
    expect(tree[0].children[0].children.map((n) => n.pid)).toEqual([3]);
  });

  it('counts a session behind two blockers once and survives a wait cycle', () => {
    const diamond = [b(1), b(2, [1]), b(3, [1]), b(4, [2, 3])];
    expect(buildBlockingTree(diamond).tree[0].waitingBehind).toBe(3);
    const cycle = [b(7, [8]), b(8, [7]), b(9, [8])];
    expect(rootBlockers(cycle)).toEqual([7]);
    const { tree } = buildBlockingTree(cycle);
    expect(tree[0].pid).toBe(7);
    expect(tree[0].children[0].pid).toBe(8);
    expect(tree[0].children[0].children.find((c) => c.pid === 7)?.cycle).toBe(true);
  });

  it('caps roots, children and depth, saying how many were left out', () => {
    const backends = [b(1), ...[2, 3, 4, 5].map((p) => b(p, [1])), b(10), b(11, [10]), b(20), b(21, [20])];
    const { tree, hiddenRoots } = buildBlockingTree(backends, { maxRoots: 2, maxChildren: 2, maxDepth: 1 });
    expect(tree.map((n) => n.pid)).toEqual([1, 10]);
    expect(hiddenRoots).toBe(1);
    expect(tree[0].children).toHaveLength(2);
    expect(tree[0].hiddenChildren).toBe(2);
    expect(tree[0].children[0].children).toEqual([]);
  });
});

describe('blocking tree with many waiters', () => {
  /** Every node of a drawn tree, depth first. */
  const nodes = (tree: ReturnType<typeof buildBlockingTree>['tree']): number[] => tree.flatMap((n) => [n.pid, ...nodes(n.children)]);

  it('draws 200 sessions queued on one row (each naming everyone ahead of it) as the queue, at once', () => {
    // pg_blocking_pids of the k-th waiter names the root's first waiter and everyone queued ahead of it: a dense graph.
    const queue = [b(1), b(2, [1])];
    for (let pid = 3; pid <= 201; pid++) queue.push(b(pid, Array.from({ length: pid - 2 }, (_, i) => i + 2)));
    const { tree } = buildBlockingTree(queue);
    expect(tree.map((n) => [n.pid, n.waitingBehind])).toEqual([[1, 200]]);
    // Root, first waiter, second, … down to the depth cap; each session drawn once.
    let node = tree[0];
    for (let depth = 0; depth < DEFAULT_TREE_CAPS.maxDepth; depth++) {
      expect(node.children.map((c) => c.pid)).toEqual([node.pid + 1]);
      expect(node.waitingBehind).toBe(201 - node.pid);
      node = node.children[0];
    }
    expect(node.children).toEqual([]);
    expect(node.hiddenChildren).toBe(1);
    expect(new Set(nodes(tree)).size).toBe(nodes(tree).length);
  });

  it('draws 200 sessions each waiting on a root and on every session before it (a fan and a chain at once)', () => {
    const dense = [b(1)];
    for (let pid = 2; pid <= 201; pid++) dense.push(b(pid, Array.from({ length: pid - 1 }, (_, i) => i + 1)));
    const fan = [b(500), ...Array.from({ length: 200 }, (_, i) => b(501 + i, [500]))];
    const { tree } = buildBlockingTree([...dense, ...fan]);
    expect(tree.map((n) => [n.pid, n.waitingBehind])).toEqual([[1, 200], [500, 200]]);
    expect(tree[1].children).toHaveLength(DEFAULT_TREE_CAPS.maxChildren);
    expect(tree[1].hiddenChildren).toBe(200 - DEFAULT_TREE_CAPS.maxChildren);
    expect(new Set(nodes([tree[0]])).size).toBe(nodes([tree[0]]).length);
  });

  it('still draws two sessions in a wait cycle behind a root under it', () => {
    // 3 and 4 wait on each other and on root 1; drawing each under the other alone would cut both off from 1.
    const { tree } = buildBlockingTree([b(1), b(2, [1]), b(3, [1, 4]), b(4, [2, 3])]);
    expect(tree[0].waitingBehind).toBe(3);
    expect(nodes(tree).sort()).toEqual([1, 2, 3, 4]);
  });
});

describe('intent resolution', () => {
  it('takes the label, then the row a backend waits on, and gives that row to whoever it waits behind', () => {
    const resolved = resolveIntents([b(1), b(2, [1], 'psql'), b(3, [2], `bridge:reevaluate:${B}`)], [{ pid: 2, intentId: A }]);
    expect(resolved.find((r) => r.pid === 1)!.intents).toEqual([{ id: A, via: 'row-holds' }]);
    expect(resolved.find((r) => r.pid === 2)!.intents).toEqual([{ id: A, via: 'row-waits' }]);
    expect(resolved.find((r) => r.pid === 3)!).toMatchObject({ operation: 'reevaluate', intents: [{ id: B, via: 'label' }] });
  });
});

describe('impactOf', () => {
  it('reports waiters, transaction age on the database clock, intents, and the root when the backend itself waits', () => {
    const backends = [
      full(1, [], { xactStart: '2026-01-01T00:00:00.000Z', intents: [{ id: A, via: 'row-holds' }] }),
      full(2, [1], { intents: [{ id: A, via: 'row-waits' }] }),
      full(3, [2], { intents: [{ id: B, via: 'label' }] }),
    ];
    const now = new Date('2026-01-01T00:01:30.000Z');
    expect(impactOf(backends, 1, now)).toMatchObject({ waitingBehind: 2, directWaiters: [2], transactionAgeMs: 90_000, isWaiting: false, waiterIntents: [A, B] });
    expect(impactOf(backends, 2, now)).toMatchObject({ waitingBehind: 1, isWaiting: true, rootBlockers: [1], transactionAgeMs: null });
    expect(impactOf(backends, 99, now)).toBeNull();
  });
});

describe('whether a cancel can help', () => {
  it('only for a backend running a query; idle in transaction is terminated at once', async () => {
    const { cancelCanHelp, isIdleInTransaction } = await import('./tree');
    expect(cancelCanHelp('active')).toBe(true);
    expect(cancelCanHelp('idle in transaction')).toBe(false);
    expect(cancelCanHelp('idle in transaction (aborted)')).toBe(false);
    expect(cancelCanHelp('idle')).toBe(false);
    expect(isIdleInTransaction('idle in transaction (aborted)')).toBe(true);
    expect(isIdleInTransaction('active')).toBe(false);
    const impact = impactOf([full(1, [], { state: 'idle in transaction', stateChange: '2026-11-23T10:00:00.000Z' }), full(2, [1])], 1, new Date('2026-11-23T10:02:00.000Z'));
    expect(impact).toMatchObject({ cancelCanHelp: false, stateAgeMs: 120_000, waitingBehind: 1 });
  });
});
