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

/**
 * Who each session behind `root` is drawn under: one blocker each, so the drawing is a tree, not every edge of the
 * graph. pg_blocking_pids names every session ahead in a lock's queue, so N sessions queued on one row form a dense
 * graph; drawn with every edge its tree grows exponentially with N. Each waiter goes under the blocker furthest
 * down the queue (the one that itself waits on the most), which keeps the queue order: root, first waiter, second,
 * and so on. A waiter that choice would cut off from the root (two sessions in a wait cycle behind it) goes under
 * the first session that reaches it from the root instead.
 */
function drawnChildren(waiters: Map<number, number[]>, blockedBy: Map<number, number[]>, root: number, behind: Set<number>): Map<number, number[]> {
  const members = new Set(behind).add(root);
  const depth = (pid: number) => blockedBy.get(pid)?.length ?? 0;
  const children = new Map<number, number[]>();
  const attach = (parent: number, child: number) => children.set(parent, [...(children.get(parent) ?? []), child]);
  const parentOf = new Map<number, number>();
  for (const pid of behind) {
    const parents = (blockedBy.get(pid) ?? []).filter((p) => p !== pid && members.has(p));
    if (!parents.length) continue;
    const parent = parents.reduce((best, p) => (depth(p) > depth(best) || (depth(p) === depth(best) && p > best) ? p : best));
    parentOf.set(pid, parent);
    attach(parent, pid);
  }
  const reached = new Set<number>([root]);
  const reach = (from: number) => {
    const stack = [from];
    while (stack.length) {
      for (const c of children.get(stack.pop()!) ?? []) {
        if (reached.has(c)) continue;
        reached.add(c);
        stack.push(c);
      }
    }
  };
  reach(root);
  if (reached.size < members.size) {
    const queue = [root];
    const queued = new Set(queue);
    for (let i = 0; i < queue.length; i++) {
      for (const w of waiters.get(queue[i]) ?? []) {
        if (!members.has(w) || w === root) continue;
        if (!reached.has(w)) {
          const old = parentOf.get(w);
          if (old !== undefined) children.set(old, (children.get(old) ?? []).filter((c) => c !== w));
          attach(queue[i], w);
          parentOf.set(w, queue[i]);
          reached.add(w);
          reach(w);
        }
        if (!queued.has(w)) {
          queued.add(w);
          queue.push(w);
        }
      }
    }
  }
  return children;
}

/**
 * The blocking graph of one snapshot, ready to draw: its root blockers (most sessions behind them first) and, for
 * any root, its tree — the sessions waiting behind it, each drawn once (drawnChildren), capped, saying what was
 * left out. `waitingBehind` counts every session behind a node, each once, whatever the drawing. Linear in the
 * sessions and their pg_blocking_pids edges per root, so a queue of hundreds on one row draws at once. The Locks
 * page's tree and the lock history's samples are both drawn by it.
 */
export function blockingGraph(backends: readonly Pick<Backend, 'pid' | 'blockedBy'>[], caps: TreeCaps = DEFAULT_TREE_CAPS) {
  const waiters = waitersIndex(backends);
  const blockedBy = new Map(backends.map((b) => [b.pid, [...new Set(b.blockedBy)]]));
  const behindOf = new Map<number, Set<number>>();
  const behind = (pid: number) => {
    let set = behindOf.get(pid);
    if (!set) behindOf.set(pid, (set = waitingBehind(waiters, pid)));
    return set;
  };
  const treeOf = (root: number): BlockingNode => {
    const children = drawnChildren(waiters, blockedBy, root, behind(root));
    const node = (pid: number, depth: number): BlockingNode => {
      const drawn = children.get(pid) ?? [];
      // A session the root itself waits on (a wait cycle the deadlock detector has not broken yet) is marked, not drawn again.
      const cycle = pid !== root && (waiters.get(pid) ?? []).includes(root);
      if (depth >= caps.maxDepth) return { pid, waitingBehind: behind(pid).size, children: [], hiddenChildren: drawn.length + (cycle ? 1 : 0) };
      // Waiters with the most sessions behind them first; pid breaks ties so the order is stable between refreshes.
      const ordered = [...drawn].sort((a, b) => behind(b).size - behind(a).size || a - b);
      const shown = ordered.slice(0, caps.maxChildren).map((c) => node(c, depth + 1));
      if (cycle) shown.push({ pid: root, waitingBehind: behind(root).size, children: [], hiddenChildren: 0, cycle: true });
      return { pid, waitingBehind: behind(pid).size, children: shown, hiddenChildren: Math.max(0, drawn.length - caps.maxChildren) };
    };
    return node(root, 0);
  };
  const roots = rootBlockers(backends)
    .map((pid) => ({ pid, behind: behind(pid).size }))
    .sort((a, b) => b.behind - a.behind || a.pid - b.pid);
  return { roots, behind, treeOf };
}

/** The blocking forest as the Locks page shows it: the first `caps.maxRoots` roots' trees, and how many roots were left out. */
export function buildBlockingTree(
  backends: readonly Pick<Backend, 'pid' | 'blockedBy'>[],
  caps: TreeCaps = DEFAULT_TREE_CAPS,
): { tree: BlockingNode[]; hiddenRoots: number } {
  const graph = blockingGraph(backends, caps);
  const shown = graph.roots.slice(0, caps.maxRoots);
  return { tree: shown.map((r) => graph.treeOf(r.pid)), hiddenRoots: graph.roots.length - shown.length };
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
    heldIntentRows: [],
  };
}

/**
 * Whether stopping this backend is for something: it blocks someone now, its transaction made others wait in the
 * last moments (the lock history's episode of it is going on or just ended), or it sits idle holding intent rows,
 * which every change of those intents must wait for. The one rule the terminate guard and the unblock panel both
 * apply.
 */
export function blocksOthers(impact: Pick<UnblockImpact, 'waitingBehind' | 'recentBlocking' | 'heldIntentRows'>): boolean {
  return impact.waitingBehind > 0 || impact.recentBlocking !== null || impact.heldIntentRows.length > 0;
}
