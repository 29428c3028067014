/**
 * What the Locks page and `GET /api/locks` see. Dates are ISO strings (the same shape over the wire); pids are
 * Postgres backend process ids.
 */

/** How we know which intent a backend is about. */
export type IntentVia =
  /** The engine labelled its transaction `bridge:<operation>:<intentId>` (application_name). */
  | 'label'
  /** It holds or waits on the tuple lock of that intent's row (page, item → ctid). */
  | 'row-waits'
  /** It blocks a backend that is queued for that intent's row: it holds the row, or is ahead in its queue. */
  | 'row-holds';

export type IntentRef = { id: string; via: IntentVia };

export type Backend = {
  pid: number;
  applicationName: string | null;
  /** The engine's operation, from the label (`bridge:<operation>:<intentId>`). */
  operation: string | null;
  /**
   * The console user (or API token owner, or worker) the engine's backend acts for: from its actor lock
   * (prisma/functions/00_helpers.sql). Null for sessions the engine does not run.
   */
  actor: string | null;
  user: string | null;
  clientAddr: string | null;
  backendType: string | null;
  state: string | null;
  query: string | null;
  xactStart: string | null;
  queryStart: string | null;
  backendStart: string | null;
  /** When its state (active, idle in transaction, …) last changed: how long it has been in that state. */
  stateChange: string | null;
  waitEventType: string | null;
  waitEvent: string | null;
  /** When its oldest ungranted lock request started (pg_locks.waitstart). */
  waitingSince: string | null;
  /** pg_blocking_pids(pid): empty unless it waits for a heavyweight lock. */
  blockedBy: number[];
  intents: IntentRef[];
};

export type LockRow = {
  pid: number;
  lockType: string;
  mode: string;
  granted: boolean;
  fastpath: boolean;
  relation: string | null;
  /** For a lock on an index: the table it indexes (the index's lock is folded into that table's row). */
  indexOf: string | null;
  /** The indexes whose locks of the same mode were folded into this table's row. */
  indexes: string[];
  page: number | null;
  tuple: number | null;
  transactionId: string | null;
  virtualXid: string | null;
  objectId: string | null;
  waitingSince: string | null;
  applicationName: string | null;
  state: string | null;
  query: string | null;
  xactStart: string | null;
  /** The intent row a tuple lock on `intents` names (ctid), when it still exists. */
  intentId: string | null;
};

export type HiddenLocks = { lockType: string; granted: boolean; count: number }[];

export type BlockingNode = {
  pid: number;
  /** Sessions waiting behind this one, directly or through others (each counted once). */
  waitingBehind: number;
  children: BlockingNode[];
  /** Direct waiters left out by the cap. */
  hiddenChildren: number;
  /** Already shown higher up this branch (a wait cycle: a deadlock the detector has not broken yet). */
  cycle?: boolean;
};

export type LocksSnapshot = {
  /** The database's clock when the snapshot was taken. */
  takenAt: string;
  /** How long the snapshot took, in ms: the page backs off when it is slow. */
  tookMs: number;
  limit: number;
  locks: LockRow[];
  summary: {
    total: number;
    waiting: number;
    shown: number;
    hidden: number;
    /** What the cap left out, per lock type and granted/waiting. */
    hiddenByType: HiddenLocks;
  };
  /** Backends that wait or block (and, up to the cap, others in a transaction; every session with `all`). */
  backends: Backend[];
  /** Whether every client session of the database was asked for, not only those in transactions. */
  allSessions: boolean;
  backendsHidden: number;
  /** Root blockers first, most sessions behind them first. */
  tree: BlockingNode[];
  treeHidden: number;
};

/** What the page shows before anyone presses cancel or terminate. */
export type UnblockImpact = {
  pid: number;
  backendStart: string | null;
  backendType: string | null;
  applicationName: string | null;
  /** The console user the engine's backend acts for (Backend.actor). */
  actor: string | null;
  user: string | null;
  state: string | null;
  query: string | null;
  xactStart: string | null;
  /** now − xact_start in ms, on the database's clock; null outside a transaction. */
  transactionAgeMs: number | null;
  /** How long it has been in its current state (e.g. idle in transaction), in ms on the database's clock. */
  stateAgeMs: number | null;
  /** Whether cancelling can help: only a backend running a query has something to cancel. */
  cancelCanHelp: boolean;
  /** Sessions waiting behind it, directly or transitively. */
  waitingBehind: number;
  directWaiters: number[];
  /** True when it is itself waiting for someone else: the root blocker is elsewhere. */
  isWaiting: boolean;
  rootBlockers: number[];
  intents: IntentRef[];
  /** Intents the sessions waiting behind it are about. */
  waiterIntents: string[];
  /**
   * What the lock history saw this very transaction (same pid, backend start and transaction start) do: an episode
   * going on, or one that ended within RECENT_BLOCKING_MS. Sessions that wait out their lock timeout and retry a
   * moment later leave gaps in which nobody waits this instant; the transaction still holds what they wait for.
   */
  recentBlocking: { episodeId: string; inProgress: boolean; lastSeenAt: string; waitersSeen: number; peakWaiters: number; lockTimeouts: number } | null;
  /**
   * Intents whose rows its open transaction has locked or changed (read from the rows themselves), when it sits idle
   * in that transaction: every change of them waits for it and then gives up, whether or not someone is waiting at
   * this instant. Also listed in `intents` (via `row-holds`).
   */
  heldIntentRows: string[];
};
