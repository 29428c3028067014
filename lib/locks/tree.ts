import type { Backend, BlockingNode, IntentRef, UnblockImpact } from './types';

/**
 * Pure functions over a snapshot of backends: the blocking tree (from pg_blocking_pids, never a pg_locks
 * self-join), which intent each backend is about, and the impact of unblocking one. No database here.
 */

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const LABEL = new RegExp(`^bridge:([A-Za-z0-9_.-]+):(${UUID})$`, 'i');

/** The engine labels its locking transactions `bridge:<operation>:<intentId>` (lib/intents/repository.ts). */
export function parseLabel(applicationName: string | null | undefined): { operation: string; intentId: string } | null {
  const match = applicationName ? LABEL.exec(applicationName) : null;
  return match ? { operation: match[1], intentId: match[2].toLowerCase() } : null;
}

/** Backends by pid, and who waits directly on whom (the inverse of pg_blocking_pids). */
export function waitersIndex(backends: readonly Pick<Backend, 'pid' | 'blockedBy'>[]): Map<number, number[]> {
  const waiters = new Map<number, number[]>();
  for (const b of backends) {
    for (const blocker of new Set(b.blockedBy)) {
      if (blocker === b.pid) continue;
      const list = waiters.get(blocker) ?? [];
      list.push(b.pid);
      waiters.set(blocker, list);
    }
  }
  for (const list of waiters.values()) list.sort((a, b) => a - b);
  return waiters;
}

/** Every session waiting behind `pid`, directly or through others (each once; cycles are safe). */
export function waitingBehind(waiters: Map<number, number[]>, pid: number): Set<number> {
  const seen = new Set<number>();
  const stack = [...(waiters.get(pid) ?? [])];
  while (stack.length) {
    const next = stack.pop()!;
    if (next === pid || seen.has(next)) continue;
    seen.add(next);
    stack.push(...(waiters.get(next) ?? []));
  }
  return seen;
}

/**
 * Who the blocking trees start at: backends that block someone and wait for nobody. A pure wait cycle (a
 * deadlock before the detector has broken it) has no such backend; its lowest pid stands in as the root.
 */
export function rootBlockers(backends: readonly Pick<Backend, 'pid' | 'blockedBy'>[]): number[] {
  const waiters = waitersIndex(backends);
  const blockedBy = new Map(backends.map((b) => [b.pid, b.blockedBy.filter((p) => p !== b.pid)]));
  const roots = [...waiters.keys()].filter((pid) => (blockedBy.get(pid) ?? []).length === 0);
  const covered = new Set<number>(roots);
  for (const r of roots) for (const p of waitingBehind(waiters, r)) covered.add(p);
  // Cycles: anything still uncovered that blocks someone.
  for (const pid of [...waiters.keys()].sort((a, b) => a - b)) {
    if (covered.has(pid)) continue;
    roots.push(pid);
    covered.add(pid);
    for (const p of waitingBehind(waiters, pid)) covered.add(p);
  }
  return roots;
}

export type TreeCaps = { maxRoots: number; maxChildren: number; maxDepth: number };
export const DEFAULT_TREE_CAPS: TreeCaps = { maxRoots: 20, maxChildren: 20, maxDepth: 8 };

/** The blocking forest: root blockers, the sessions waiting on each, and so on; capped, with what was left out. */
export function buildBlockingTree(
  backends: readonly Pick<Backend, 'pid' | 'blockedBy'>[],
  caps: TreeCaps = DEFAULT_TREE_CAPS,
): { tree: BlockingNode[]; hiddenRoots: number } {
  const waiters = waitersIndex(backends);
  const node = (pid: number, path: Set<number>, depth: number): BlockingNode => {
    const behind = waitingBehind(waiters, pid).size;
    if (path.has(pid)) return { pid, waitingBehind: behind, children: [], hiddenChildren: 0, cycle: true };
    const direct = waiters.get(pid) ?? [];
    if (depth >= caps.maxDepth) return { pid, waitingBehind: behind, children: [], hiddenChildren: direct.length };
    const nextPath = new Set(path).add(pid);
    // Waiters with the most sessions behind them first; pid breaks ties so the order is stable between refreshes.
    const ordered = [...direct].sort((a, b) => waitingBehind(waiters, b).size - waitingBehind(waiters, a).size || a - b);
    const shown = ordered.slice(0, caps.maxChildren);
    return { pid, waitingBehind: behind, children: shown.map((c) => node(c, nextPath, depth + 1)), hiddenChildren: direct.length - shown.length };
  };
  const roots = rootBlockers(backends)
    .map((pid) => ({ pid, behind: waitingBehind(waiters, pid).size }))
    .sort((a, b) => b.behind - a.behind || a.pid - b.pid);
  const shown = roots.slice(0, caps.maxRoots);
  return { tree: shown.map((r) => node(r.pid, new Set(), 0)), hiddenRoots: roots.length - shown.length };
}

/**
 * Which intents each backend is about: its own label first; then the intent rows it holds or waits on as tuple
 * locks (`rowLocks`: pid → intent, from pg_locks page/item → ctid); then, for the backends those wait behind, the
 * same rows (the holder of a row lock shows only its transaction id in pg_locks, never the row).
 */
export function resolveIntents<B extends Pick<Backend, 'pid' | 'applicationName' | 'blockedBy'>>(
  backends: readonly B[],
  rowLocks: readonly { pid: number; intentId: string }[],
): (B & { operation: string | null; intents: IntentRef[] })[] {
  const refs = new Map<number, IntentRef[]>();
  const add = (pid: number, ref: IntentRef) => {
    const list = refs.get(pid) ?? [];
    if (!list.some((r) => r.id === ref.id)) list.push(ref);
    refs.set(pid, list);
  };
  for (const b of backends) {
    const label = parseLabel(b.applicationName);
    if (label) add(b.pid, { id: label.intentId, via: 'label' });
  }
  const byPid = new Map(backends.map((b) => [b.pid, b]));
  for (const lock of rowLocks) add(lock.pid, { id: lock.intentId.toLowerCase(), via: 'row-waits' });
  for (const lock of rowLocks) {
    for (const blocker of byPid.get(lock.pid)?.blockedBy ?? []) {
      if (blocker !== lock.pid) add(blocker, { id: lock.intentId.toLowerCase(), via: 'row-holds' });
    }
  }
  return backends.map((b) => ({ ...b, operation: parseLabel(b.applicationName)?.operation ?? null, intents: refs.get(b.pid) ?? [] }));
}

/** What cancelling or terminating `pid` would touch, from a snapshot taken at `now` (the database's clock). */
/**
 * pg_cancel_backend stops the query a backend is running. A session idle in its transaction runs none: a cancel
 * does nothing and it keeps its locks, so for it terminating at once is the only remedy.
 */
export function cancelCanHelp(state: string | null): boolean {
  return state === 'active' || state === 'fastpath function call';
}

export function isIdleInTransaction(state: string | null): boolean {
  return state === 'idle in transaction' || state === 'idle in transaction (aborted)';
}

export function impactOf(backends: readonly Backend[], pid: number, now: Date): UnblockImpact | null {
  const me = backends.find((b) => b.pid === pid);
  if (!me) return null;
  const waiters = waitersIndex(backends);
  const behind = waitingBehind(waiters, pid);
  const roots = rootBlockers(backends);
  const myRoots = me.blockedBy.length ? roots.filter((r) => waitingBehind(waiters, r).has(pid)) : [];
  const waiterIntents = new Set<string>();
  for (const w of behind) for (const ref of backends.find((b) => b.pid === w)?.intents ?? []) waiterIntents.add(ref.id);
  return {
    pid,
    backendStart: me.backendStart,
    backendType: me.backendType,
    applicationName: me.applicationName,
    actor: me.actor,
    user: me.user,
    state: me.state,
    query: me.query,
    xactStart: me.xactStart,
    transactionAgeMs: me.xactStart ? Math.max(0, now.getTime() - new Date(me.xactStart).getTime()) : null,
    stateAgeMs: me.stateChange ? Math.max(0, now.getTime() - new Date(me.stateChange).getTime()) : null,
    cancelCanHelp: cancelCanHelp(me.state),
    waitingBehind: behind.size,
    directWaiters: waiters.get(pid) ?? [],
    isWaiting: me.blockedBy.length > 0,
    rootBlockers: myRoots,
    intents: me.intents,
    waiterIntents: [...waiterIntents].sort(),
    recentBlocking: null,
  };
}

/**
 * Whether stopping this backend is for something: it blocks someone now, or its transaction made others wait in the
 * last moments (the lock history's episode of it is going on or just ended). The one rule the terminate guard and
 * the unblock panel both apply.
 */
export function blocksOthers(impact: Pick<UnblockImpact, 'waitingBehind' | 'recentBlocking'>): boolean {
  return impact.waitingBehind > 0 || impact.recentBlocking !== null;
}
