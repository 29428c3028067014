import { blockingGraph } from '../tree';
import type { Backend, BlockingNode } from '../types';

/**
 * Pure functions that turn one sample of the blocking graph into what the lock history keeps: per root blocker (its
 * pid, backend start and transaction start — a reused pid or a new transaction is a new root) an observation, and
 * how an episode in progress changes with it. No database here.
 */

export type RootKey = { pid: number; backendStart: string; xactStart: string | null };

/** A backend as the history keeps it: who, doing what, about which intents. */
export type EpisodeBackend = {
  pid: number;
  backendStart: string | null;
  applicationName: string | null;
  actor: string | null;
  operation: string | null;
  user: string | null;
  clientAddr: string | null;
  state: string | null;
  xactStart: string | null;
  query: string | null;
  intents: string[];
};

export type EpisodeWaiter = EpisodeBackend & {
  /** When it started waiting (pg_locks.waitstart); a wait that ran out and came back is a second entry. */
  waitingSince: string | null;
  firstSeenAt: string;
  lastSeenAt: string;
  /** From the start of its wait to the last sample that saw it waiting: a lower bound. */
  waitedMs: number;
};

/** A lock the episode involved: what the waiters asked for and what the root held. */
export type EpisodeLock = { lockType: string; mode: string; relation: string | null; granted: boolean };

/** The tree at one moment, with each backend's details (query text included: masked at the door for viewers). */
export type EpisodeTree = { tree: BlockingNode[]; backends: (EpisodeBackend & { blockedBy: number[]; waitingSince: string | null })[] };

export type RootObservation = {
  key: RootKey;
  root: EpisodeBackend;
  /** Every session waiting behind the root now, directly or through others. */
  waiters: EpisodeWaiter[];
  tree: EpisodeTree;
  /** The earliest wait behind this root (the blocking began then at the latest), or the sample's time. */
  startedAt: string;
  intents: { id: string; role: 'root' | 'waiter' }[];
  applications: string[];
};

/** Waiters kept per episode at most; the count of waiters is kept whole. */
export const MAX_WAITERS_KEPT = 200;
const MAX_LOCKS_KEPT = 50;
const MAX_APPLICATIONS_KEPT = 20;

function toEpisodeBackend(b: Backend): EpisodeBackend {
  return {
    pid: b.pid,
    backendStart: b.backendStart,
    applicationName: b.applicationName,
    actor: b.actor,
    operation: b.operation,
    user: b.user,
    clientAddr: b.clientAddr,
    state: b.state,
    xactStart: b.xactStart,
    query: b.query,
    intents: b.intents.map((i) => i.id),
  };
}

const msBetween = (from: string | null, to: string) => (from ? Math.max(0, new Date(to).getTime() - new Date(from).getTime()) : 0);

/** One observation per root blocker of the sample (roots whose backend start is unknown cannot be keyed: skipped). */
export function observeRoots(backends: readonly Backend[], now: string): RootObservation[] {
  const byPid = new Map(backends.map((b) => [b.pid, b]));
  const graph = blockingGraph(backends);
  const out: RootObservation[] = [];
  // Most sessions behind first: when a storm of new roots exceeds the budget, the biggest blockings are the ones kept whole.
  for (const { pid: rootPid } of graph.roots) {
    const root = byPid.get(rootPid);
    if (!root?.backendStart) continue;
    const behind = [...graph.behind(rootPid)].sort((a, b) => a - b);
    const members = [root, ...behind.flatMap((pid) => byPid.get(pid) ?? [])];
    const waiting = behind.flatMap((pid) => {
      const w = byPid.get(pid);
      return w ? [{ ...toEpisodeBackend(w), waitingSince: w.waitingSince, firstSeenAt: now, lastSeenAt: now, waitedMs: msBetween(w.waitingSince, now) }] : [];
    });
    const earliest = waiting.map((w) => w.waitingSince).filter((s): s is string => !!s).sort()[0];
    const intents = new Map<string, 'root' | 'waiter'>();
    for (const id of root.intents.map((i) => i.id)) intents.set(`${id}:root`, 'root');
    for (const w of waiting) for (const id of w.intents) intents.set(`${id}:waiter`, 'waiter');
    out.push({
      key: { pid: rootPid, backendStart: root.backendStart, xactStart: root.xactStart },
      root: toEpisodeBackend(root),
      waiters: waiting,
      tree: {
        tree: [graph.treeOf(rootPid)],
        backends: members.map((b) => ({ ...toEpisodeBackend(b), blockedBy: b.blockedBy, waitingSince: b.waitingSince })),
      },
      startedAt: earliest && earliest < now ? earliest : now,
      intents: [...intents].map(([k, role]) => ({ id: k.slice(0, k.lastIndexOf(':')), role })),
      applications: [...new Set(members.map((b) => b.applicationName).filter((a): a is string => !!a))],
    });
  }
  return out;
}

export const rootKeyString = (k: RootKey) => `${k.pid}|${new Date(k.backendStart).toISOString()}|${k.xactStart ? new Date(k.xactStart).toISOString() : ''}`;

const waiterKey = (w: Pick<EpisodeWaiter, 'pid' | 'backendStart' | 'waitingSince'>) => `${w.pid}|${w.backendStart ?? ''}|${w.waitingSince ?? ''}`;

/** An episode in progress, as the sampler reads it back (any sampler: after a takeover the new one continues it). */
export type OpenEpisode = {
  id: string;
  key: RootKey;
  startedAt: string;
  lastSeenAt: string;
  peakWaiters: number;
  waiters: EpisodeWaiter[];
  locks: EpisodeLock[];
  intentIds: string[];
  applications: string[];
  /** The shape of the tree last written as a sample: a sample with the same shape writes none. */
  lastShape: string | null;
};

/** The tree's shape: who waits behind whom, and in which state each is. Details alone changing is no new sample. */
export function treeShape(tree: EpisodeTree): string {
  return JSON.stringify(tree.backends.map((b) => [b.pid, [...b.blockedBy].sort((x, y) => x - y), b.state]).sort((a, b) => Number(a[0]) - Number(b[0])));
}

export type EpisodeUpdate = {
  lastSeenAt: string;
  peak: { waiters: number; at: string; tree: EpisodeTree } | null;
  waiters: EpisodeWaiter[];
  locks: EpisodeLock[];
  intentIds: string[];
  applications: string[];
  /** The tree to write as a sample, when its shape changed since the last one. */
  sample: { waiters: number; tree: EpisodeTree; shape: string } | null;
  root: EpisodeBackend;
};

function mergeLocks(a: readonly EpisodeLock[], b: readonly EpisodeLock[]): EpisodeLock[] {
  const seen = new Map<string, EpisodeLock>();
  for (const l of [...a, ...b]) seen.set(`${l.lockType}|${l.mode}|${l.relation ?? ''}|${l.granted}`, l);
  return [...seen.values()].slice(0, MAX_LOCKS_KEPT);
}

/** What an episode in progress becomes with one more sample of its root. */
export function continueEpisode(open: OpenEpisode, obs: RootObservation, locks: readonly EpisodeLock[], now: string): EpisodeUpdate {
  const waiters = new Map(open.waiters.map((w) => [waiterKey(w), w]));
  for (const w of obs.waiters) {
    const before = waiters.get(waiterKey(w));
    waiters.set(waiterKey(w), before ? { ...w, firstSeenAt: before.firstSeenAt } : w);
  }
  const shape = treeShape(obs.tree);
  return {
    lastSeenAt: now,
    peak: obs.waiters.length > open.peakWaiters ? { waiters: obs.waiters.length, at: now, tree: obs.tree } : null,
    waiters: [...waiters.values()].slice(0, MAX_WAITERS_KEPT),
    locks: mergeLocks(open.locks, locks),
    intentIds: [...new Set([...open.intentIds, ...obs.intents.map((i) => i.id)])],
    applications: [...new Set([...open.applications, ...obs.applications])].slice(0, MAX_APPLICATIONS_KEPT),
    sample: shape === open.lastShape ? null : { waiters: obs.waiters.length, tree: obs.tree, shape },
    root: obs.root,
  };
}

/** A new episode's first row. */
export function openEpisode(obs: RootObservation, locks: readonly EpisodeLock[], now: string) {
  return {
    key: obs.key,
    startedAt: obs.startedAt,
    lastSeenAt: now,
    peakWaiters: obs.waiters.length,
    peakAt: now,
    tree: obs.tree,
    root: obs.root,
    waiters: obs.waiters.slice(0, MAX_WAITERS_KEPT),
    locks: mergeLocks([], locks),
    intentIds: [...new Set(obs.intents.map((i) => i.id))],
    applications: obs.applications.slice(0, MAX_APPLICATIONS_KEPT),
  };
}

/**
 * When an episode no longer seen ended. It was last seen at `lastSeenAt` and found gone at `now`: the truth lies
 * between, so the middle is at most half a sample off. After a long gap (the sampler was away: a takeover, a
 * database too busy to answer) nothing is known about the gap, and the last sighting is the honest end.
 */
export function endOf(lastSeenAt: string, now: string, sampleMs: number): string {
  const gap = new Date(now).getTime() - new Date(lastSeenAt).getTime();
  if (gap <= 0) return lastSeenAt;
  if (gap > 3 * sampleMs) return lastSeenAt;
  return new Date(new Date(lastSeenAt).getTime() + gap / 2).toISOString();
}

/** Upper bounds (ms) of the episode-duration histogram /api/metrics exports. */
export const EPISODE_DURATION_BOUNDS_MS = [1_000, 2_000, 5_000, 10_000, 30_000, 60_000, 300_000, 900_000] as const;
