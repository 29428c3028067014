'use client';

import { Fragment, useState, type ReactNode } from 'react';
import { operationLabel } from '@/lib/contention/series';
import { LOCKS_BACKOFF, SLOW_SNAPSHOT_MS } from '@/lib/locks/backoff';
import { ageAt } from '@/lib/locks/format';
import { isIdleInTransaction } from '@/lib/locks/tree';
import type { Backend, BlockingNode, LocksSnapshot } from '@/lib/locks/types';
import type { ApiError } from '@/lib/console/api-client';
import { lockKeys, locksSnapshotUrl } from '@/lib/console/locks-client';
import styles from './console.module.css';
import { IntentLinks } from './IntentLinks';
import { PageHeader } from '@/components/ui/PageHeader';
import { formatUtcTime } from '@/components/ui/time';
import { ErrorState } from '@/components/ui/ErrorState';
import { Skeleton, TableSkeleton } from '@/components/ui/Skeleton';
import { LiveStatus, PressureBanner, useBackoffQuery } from './live';
import { UnblockPanel } from './UnblockPanel';
import { LeasesSection } from './LeasesSection';
import { LockHistory } from './LockHistory';

/**
 * The Locks page body: polls GET /api/locks with a visible backoff, and shows the blocking tree (root blockers
 * first), the sessions involved, and the capped lock list with its summary row.
 */
export function LocksView({
  canCancel,
  canTerminate,
  initialPid = null,
  initialEpisodeId = null,
  initialIntentId = '',
}: {
  canCancel: boolean;
  canTerminate: boolean;
  /** `?pid=`: a backend to open the unblock panel for (a 423 answer links here with its holder). */
  initialPid?: number | null;
  /** `?episode=`: a past episode to open in the history. */
  initialEpisodeId?: string | null;
  /** `?intent=`: the history filtered to one intent. */
  initialIntentId?: string;
}) {
  const [limit, setLimit] = useState(100);
  const [allSessions, setAllSessions] = useState(false);
  const { query, intervalMs, lastOutcome, backingOff } = useBackoffQuery<LocksSnapshot>({
    queryKey: lockKeys.snapshot(limit, allSessions),
    url: locksSnapshotUrl(limit, allSessions),
    policy: LOCKS_BACKOFF,
    isSlow: (s) => s.tookMs > SLOW_SNAPSHOT_MS,
  });
  const [selected, setSelected] = useState<number | null>(canCancel ? initialPid : null);
  const snap = query.data;

  return (
    <div className={styles.page}>
      <PageHeader
        title="Locks"
        description="Who holds and who waits, from pg_locks and pg_blocking_pids, and which intents they are about."
        actions={
          <SnapshotControls
            status={<LiveStatus intervalMs={intervalMs} lastOutcome={lastOutcome} backingOff={backingOff} fetching={query.isFetching} updatedAt={query.dataUpdatedAt} />}
            limit={limit}
            onLimit={setLimit}
            allSessions={allSessions}
            onAllSessions={setAllSessions}
            refreshing={query.isFetching}
            onRefresh={() => void query.refetch()}
          />
        }
      />

      <PressureBanner intervalMs={intervalMs} lastOutcome={lastOutcome} message={query.error?.isPressure ? query.error.message : undefined} staleSince={snap?.takenAt} />
      {query.isError && snap && !query.error.isPressure && (
        <div className={`${styles.banner} ${styles.bannerError}`} role="alert">
          Refresh failed ({query.error.message}); showing the snapshot from {formatUtcTime(snap.takenAt)}.
        </div>
      )}

      {!snap && <SnapshotPending pending={query.isPending} error={query.isError ? query.error : null} retrying={query.isFetching} onRetry={() => void query.refetch()} />}

      {snap && (
        <>
          {initialPid !== null && <NamedBackendNote pid={initialPid} snap={snap} />}
          <BlockingTreeSection snap={snap} canCancel={canCancel} canTerminate={canTerminate} selected={selected} onSelect={setSelected} named={initialPid} />
          <SessionsSection snap={snap} named={initialPid} onUnblock={canCancel ? (pid) => setSelected(pid) : null} />
          <LocksSection snap={snap} />
          <p className={styles.hint}>
            Snapshot taken {formatUtcTime(snap.takenAt)} in {snap.tookMs} ms (lock_timeout 100 ms, statement_timeout 1 s).
          </p>
        </>
      )}
      <LockHistory initialEpisodeId={initialEpisodeId} initialIntentId={initialIntentId} />
      <LeasesSection />
    </div>
  );
}

/** The page's own controls: how many locks, whose sessions, and a refresh now. */
function SnapshotControls({
  status,
  limit,
  onLimit,
  allSessions,
  onAllSessions,
  refreshing,
  onRefresh,
}: {
  status: ReactNode;
  limit: number;
  onLimit: (n: number) => void;
  allSessions: boolean;
  onAllSessions: (all: boolean) => void;
  refreshing: boolean;
  onRefresh: () => void;
}) {
  return (
    <div className={styles.toolbar}>
      {status}
      <label className={styles.hint}>
        show{' '}
        <select className="field" value={limit} onChange={(e) => onLimit(Number(e.target.value))} aria-label="Locks shown at most">
          {[50, 100, 250, 500].map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>{' '}
        locks
      </label>
      <label className={styles.hint}>
        <input type="checkbox" checked={allSessions} onChange={(e) => onAllSessions(e.target.checked)} /> every session of the database
      </label>
      <button type="button" className="btn btn-sm" onClick={onRefresh} disabled={refreshing}>
        Refresh now
      </button>
    </div>
  );
}

/** Before the first snapshot: loading, failed, or waiting for a database under pressure to answer in time. */
function SnapshotPending({ pending, error, retrying, onRetry }: { pending: boolean; error: ApiError | null; retrying: boolean; onRetry: () => void }) {
  return (
    <>
      {pending && (
        <section className={styles.section}>
          <h2>Blocking tree</h2>
          <Skeleton lines={4} label="Loading the blocking tree" />
          <h2 style={{ marginTop: 18 }}>Locks</h2>
          <TableSkeleton rows={8} columns={8} label="Loading locks" />
        </section>
      )}
      {error && !error.isPressure && <ErrorState title="The lock snapshot could not be loaded" error={error} onRetry={onRetry} retrying={retrying} />}
      {error?.isPressure && (
        <div className={styles.empty}>No snapshot yet: waiting for the database to answer within the page’s own timeouts.</div>
      )}
    </>
  );
}

/**
 * Said above the tree when the page was opened for one backend (`?pid=`, the holder a lock refusal named): where it
 * is marked, or that it is no longer in a transaction — it let go of what it held, and the refused change can be
 * tried again.
 */
function NamedBackendNote({ pid, snap }: { pid: number; snap: LocksSnapshot }) {
  const b = snap.backends.find((x) => x.pid === pid);
  return (
    <div className={`${styles.banner} ${styles.bannerInfo}`} role="status" data-testid="named-backend">
      {b ? (
        <>
          Backend <strong className={styles.mono}>{pid}</strong> ({b.applicationName || 'no application name'}, {b.state ?? 'state unknown'}
          {b.xactStart && <>, transaction {ageAt(b.xactStart, snap.takenAt)}</>}) is marked below.
        </>
      ) : (
        <>
          Backend <strong className={styles.mono}>{pid}</strong> is not in a transaction any more: it has let go of the locks it held, so a refused change can be
          tried again. Blockings the sampler saw are kept in the history below.
        </>
      )}
    </div>
  );
}

function BackendLine({ b, now }: { b: Backend; now: string }) {
  return (
    <span className={styles.nodeMeta}>
      {b.applicationName || '(no application name)'}
      {b.actor && (
        <>
          {' '}
          · for console user <strong data-testid="node-actor">{b.actor}</strong>
        </>
      )}{' '}
      · {b.user ?? '?'}
      {b.clientAddr && <> @ {b.clientAddr}</>} · {b.state ?? '—'}
      {b.stateChange && <> for {ageAt(b.stateChange, now)}</>}
      {b.xactStart && <> · transaction {ageAt(b.xactStart, now)}</>}
      {b.waitingSince && <> · waiting {ageAt(b.waitingSince, now)}</>}
    </span>
  );
}

function TreeNode({ node, byPid, snap, depth, ctx }: { node: BlockingNode; byPid: Map<number, Backend>; snap: LocksSnapshot; depth: number; ctx: TreeCtx }) {
  const b = byPid.get(node.pid);
  const isRoot = depth === 0;
  return (
    <li data-testid={`tree-node-${node.pid}`} data-pid={node.pid} data-named={ctx.named === node.pid ? 'true' : undefined}>
      <div className={`${styles.node} ${isRoot ? styles.nodeRoot : ''} ${ctx.named === node.pid ? styles.nodeNamed : ''}`}>
        <div className={styles.nodeHead}>
          <strong className={styles.mono}>pid {node.pid}</strong>
          {isRoot ? <span className={`${styles.badge} ${styles.badgeRoot}`}>root blocker</span> : <span className={`${styles.badge} ${styles.badgeWait}`}>waiting</span>}
          {node.waitingBehind > 0 && <span className={styles.badge}>{node.waitingBehind} waiting behind</span>}
          {node.cycle && <span className={`${styles.badge} ${styles.badgeRoot}`}>wait cycle (deadlock not yet broken)</span>}
          {b && isIdleInTransaction(b.state) && node.waitingBehind > 0 && (
            <span className={`${styles.badge} ${styles.badgeRoot}`} data-testid="idle-in-transaction">
              idle in transaction{b.stateChange ? ` for ${ageAt(b.stateChange, snap.takenAt)}` : ''}
            </span>
          )}
          {b && <BackendLine b={b} now={snap.takenAt} />}
          {b && <IntentLinks refs={b.intents} empty="no intent known" />}
          {ctx.canCancel && node.waitingBehind > 0 && !node.cycle && (
            <button type="button" className="btn btn-sm btn-danger" onClick={() => ctx.onSelect(ctx.selected === node.pid ? null : node.pid)} aria-expanded={ctx.selected === node.pid}>
              Unblock…
            </button>
          )}
        </div>
        {b?.query && <span className={`${styles.query} ${styles.nodeQuery}`} title={b.query}>{b.query}</span>}
      </div>
      {(node.children.length > 0 || node.hiddenChildren > 0) && (
        <ul>
          {node.children.map((c) => (
            <TreeNode key={c.pid} node={c} byPid={byPid} snap={snap} depth={depth + 1} ctx={ctx} />
          ))}
          {node.hiddenChildren > 0 && <li className={styles.hint}>… and {node.hiddenChildren} more waiting directly on pid {node.pid}</li>}
        </ul>
      )}
    </li>
  );
}

/** `named`: the backend a link into the page asked for (`?pid=`, e.g. the holder a lock refusal named), marked wherever it shows. */
type TreeCtx = { canCancel: boolean; canTerminate: boolean; selected: number | null; onSelect: (pid: number | null) => void; named: number | null };

function BlockingTreeSection({ snap, ...ctx }: { snap: LocksSnapshot } & TreeCtx) {
  const byPid = new Map(snap.backends.map((b) => [b.pid, b]));
  return (
    <section className={styles.section} data-testid="blocking-tree">
      <h2>Blocking tree</h2>
      <p className={styles.sectionNote}>
        From pg_blocking_pids. Roots hold what others wait for; {ctx.canCancel
          ? 'unblocking shows the impact first; a session running a query is cancelled before it may be terminated, one idle in its transaction is terminated at once.'
          : 'the on-call role can unblock them.'}
      </p>
      {/* Rendered beside the tree, not inside its node: a successful cancel removes the node at the next refresh,
          and the operator must still see what their action did. */}
      {ctx.selected !== null && <UnblockPanel key={ctx.selected} pid={ctx.selected} canTerminate={ctx.canTerminate} onClose={() => ctx.onSelect(null)} />}
      {snap.tree.length === 0 ? (
        <div className={styles.empty} data-testid="tree-empty">Nobody is waiting for a lock right now.</div>
      ) : (
        <ul className={styles.tree}>
          {snap.tree.map((n) => (
            <TreeNode key={n.pid} node={n} byPid={byPid} snap={snap} depth={0} ctx={ctx} />
          ))}
          {snap.treeHidden > 0 && <li className={styles.hint}>… and {snap.treeHidden} more root blockers with fewer sessions behind them</li>}
        </ul>
      )}
    </section>
  );
}

/**
 * `onUnblock`: for on-call, opens the unblock panel of a session idle in its transaction, which may hold intent rows
 * that nobody happens to wait for right now (the blocking tree lists only sessions someone waits behind).
 */
function SessionsSection({ snap, named, onUnblock }: { snap: LocksSnapshot; named: number | null; onUnblock: ((pid: number) => void) | null }) {
  return (
    <section className={styles.section}>
      <h2>Sessions</h2>
      <p className={styles.sectionNote}>
        {snap.allSessions ? 'Every client session of the database' : 'Backends that wait, block, or are in a transaction'}; the intent each is about comes from the engine’s label or from the row it holds or waits on.
      </p>
      {snap.backends.length === 0 ? (
        <div className={styles.empty}>{snap.allSessions ? 'No other session is connected.' : 'No session is in a transaction.'}</div>
      ) : (
        <div className={styles.scroll}>
          <table className={styles.table} data-testid="sessions-table">
            <thead>
              <tr>
                <th>pid</th>
                <th>application</th>
                <th>console user</th>
                <th>database user @ client</th>
                <th>intent</th>
                <th>state, for</th>
                <th>wait event</th>
                <th>blocked by</th>
                <th>transaction</th>
                <th>query</th>
              </tr>
            </thead>
            <tbody>
              {snap.backends.map((b) => (
                <SessionRow key={b.pid} b={b} named={named} takenAt={snap.takenAt} onUnblock={onUnblock} />
              ))}
              {snap.backendsHidden > 0 && (
                <tr className={styles.summaryRow}>
                  <td colSpan={10}>… and {snap.backendsHidden} more sessions{snap.allSessions ? '' : ' in a transaction'}, not shown</td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

/** One session: who it is, what it is about, what it waits on, who blocks it, and its query. */
function SessionRow({ b, named, takenAt, onUnblock }: { b: Backend; named: number | null; takenAt: string; onUnblock: ((pid: number) => void) | null }) {
  return (
    <tr
      id={`session-${b.pid}`}
      className={`${b.blockedBy.length ? styles.waitingRow : ''} ${b.pid === named ? styles.namedRow : ''}`}
      data-testid={`session-${b.pid}`}
      data-named={b.pid === named ? 'true' : undefined}
    >
      <td className={`${styles.mono} ${styles.nowrap}`}>{b.pid}</td>
      <td className={styles.wrap}>{b.applicationName || '—'}</td>
      <td className={styles.wrap} data-testid="session-actor">
        {b.actor ? (
          <>
            <strong>{b.actor}</strong>
            {b.operation && <span className={styles.hint}> · {operationLabel(b.operation).toLowerCase()}</span>}
          </>
        ) : (
          '—'
        )}
      </td>
      <td className={styles.wrap} data-testid="session-user">
        {b.user ?? '?'}
        {b.clientAddr ? <span className={styles.hint}> @ {b.clientAddr}</span> : <span className={styles.hint}> (local socket)</span>}
      </td>
      <td>
        <IntentLinks refs={b.intents} />
      </td>
      <td data-testid="session-state">
        {b.state ?? '—'}
        {b.stateChange && <span className={styles.hint}> · {ageAt(b.stateChange, takenAt)}</span>}
        {onUnblock && isIdleInTransaction(b.state) && (
          <>
            {' '}
            <button
              type="button"
              className="btn btn-sm"
              onClick={() => {
                onUnblock(b.pid);
                // The panel opens at the top of the page, above the tree.
                requestAnimationFrame(() => document.querySelector(`[data-testid="unblock-panel-${b.pid}"]`)?.scrollIntoView({ block: 'start' }));
              }}
            >
              Unblock…
            </button>
          </>
        )}
      </td>
      <td className={styles.wrap} data-testid="session-wait">
        {b.waitEventType ? `${b.waitEventType}: ${b.waitEvent ?? '?'}` : '—'}
        {b.waitingSince && <span className={styles.hint}> · {ageAt(b.waitingSince, takenAt)}</span>}
      </td>
      <td className={styles.mono}>{b.blockedBy.join(', ') || '—'}</td>
      <td className={styles.nowrap}>{ageAt(b.xactStart, takenAt)}</td>
      <td className={styles.queryCell}>
        <span className={styles.query} title={b.query ?? undefined}>
          {b.query ?? '—'}
        </span>
      </td>
    </tr>
  );
}

function target(l: LocksSnapshot['locks'][number]): string {
  switch (l.lockType) {
    case 'relation':
      return l.relation ?? '?';
    case 'tuple':
      return `${l.relation ?? '?'} (${l.page},${l.tuple})`;
    case 'page':
      return `${l.relation ?? '?'} page ${l.page}`;
    case 'transactionid':
      return `xid ${l.transactionId}`;
    case 'virtualxid':
      return `vxid ${l.virtualXid}`;
    default:
      return l.objectId ?? l.relation ?? '—';
  }
}

/** Relation names such as intents_payload_trgm_idx may wrap after an underscore, never inside a word. */
function breakableName(name: string): ReactNode {
  const parts = name.split('_');
  return parts.map((part, i) => (
    <Fragment key={i}>
      {part}
      {i < parts.length - 1 && (
        <>
          _<wbr />
        </>
      )}
    </Fragment>
  ));
}

function LocksSection({ snap }: { snap: LocksSnapshot }) {
  const { summary } = snap;
  return (
    <section className={styles.section}>
      <h2>Locks</h2>
      <p className={styles.sectionNote}>
        {summary.total} lock{summary.total === 1 ? '' : 's'} ({summary.waiting} waiting); waits first, then the blockers’ locks. Capped at {snap.limit}. A table’s row carries the
        same lock on its indexes (hover to name them).
      </p>
      {snap.locks.length === 0 ? (
        <div className={styles.empty} data-testid="locks-empty">No locks are held or awaited by other sessions.</div>
      ) : (
        <div className={styles.scroll}>
          <table className={styles.table} data-testid="locks-table">
            <thead>
              <tr>
                <th>pid</th>
                <th>lock type</th>
                <th>mode</th>
                <th>relation / target</th>
                <th>granted</th>
                <th>waiting since</th>
                <th>application</th>
                <th>intent</th>
                <th>query</th>
              </tr>
            </thead>
            <tbody>
              {snap.locks.map((l, i) => (
                <tr key={`${l.pid}-${l.lockType}-${l.mode}-${i}`} className={l.granted ? '' : styles.waitingRow} data-testid="lock-row" data-pid={l.pid} data-granted={String(l.granted)}>
                  <td className={`${styles.mono} ${styles.nowrap}`}>{l.pid}</td>
                  <td>{l.lockType}</td>
                  <td>{l.mode}</td>
                  <td className={`${styles.mono} ${styles.wrap}`} data-testid="lock-target">
                    {breakableName(target(l))}
                    {l.indexes.length > 0 && (
                      <span className={styles.hint} title={l.indexes.join(', ')} data-testid="folded-indexes">
                        {' '}
                        + {l.indexes.length} index{l.indexes.length === 1 ? '' : 'es'}
                      </span>
                    )}
                  </td>
                  <td>{l.granted ? <span className={`${styles.badge} ${styles.badgeOk}`}>granted</span> : <span className={`${styles.badge} ${styles.badgeWait}`}>waiting</span>}</td>
                  <td className={styles.nowrap}>{l.waitingSince ? `${ageAt(l.waitingSince, snap.takenAt)} ago` : '—'}</td>
                  <td className={styles.wrap}>{l.applicationName || '—'}</td>
                  <td>{l.intentId ? <IntentLinks refs={[{ id: l.intentId, via: null }]} /> : '—'}</td>
                  <td className={styles.queryCell}>
                    <span className={styles.query} title={l.query ?? undefined}>
                      {l.query ?? '—'}
                    </span>
                  </td>
                </tr>
              ))}
              {summary.hidden > 0 && (
                <tr className={styles.summaryRow} data-testid="locks-summary">
                  <td colSpan={9}>
                    … and {summary.hidden} more not shown:{' '}
                    {summary.hiddenByType.map((h) => `${h.count} ${h.lockType} ${h.granted ? 'granted' : 'waiting'}`).join(', ')}
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
