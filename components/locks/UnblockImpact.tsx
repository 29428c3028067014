import { formatDuration } from '@/lib/locks/format';
import type { UnblockImpact as Impact } from '@/lib/locks/types';
import styles from './console.module.css';
import { IntentLinks } from './IntentLinks';

/** What stopping a backend would free: who waits behind it (now and lately), how old its transaction is, which intents. */
export function UnblockImpact({ impact }: { impact: Impact }) {
  return (
    <>
      <div className={styles.impact} data-testid="impact">
        <div className={styles.stat}>
          <div className={styles.statValue} data-testid="impact-waiting">{impact.waitingBehind}</div>
          <div className={styles.statLabel}>sessions waiting behind it{impact.directWaiters.length ? ` (directly: ${impact.directWaiters.join(', ')})` : ''}</div>
        </div>
        {impact.recentBlocking && (
          <div className={styles.stat} data-testid="impact-recent">
            <div className={styles.statValue}>{impact.recentBlocking.waitersSeen}</div>
            <div className={styles.statLabel}>
              sessions kept waiting by this transaction {impact.recentBlocking.inProgress ? 'in the episode going on' : 'in the last minute'}
              {impact.recentBlocking.lockTimeouts ? `, ${impact.recentBlocking.lockTimeouts} of them timed out` : ''} ·{' '}
              <a href={`/locks?episode=${impact.recentBlocking.episodeId}`}>episode {impact.recentBlocking.episodeId}</a>
            </div>
          </div>
        )}
        {impact.heldIntentRows.length > 0 && (
          <div className={styles.stat} data-testid="impact-held">
            <div className={styles.statValue}>{impact.heldIntentRows.length}</div>
            <div className={styles.statLabel}>
              intent rows its idle transaction holds: every change of them waits for it, then gives up ·{' '}
              <IntentLinks refs={impact.heldIntentRows.map((id) => ({ id, via: null }))} />
            </div>
          </div>
        )}
        <div className={styles.stat}>
          <div className={styles.statValue} data-testid="impact-age">{formatDuration(impact.transactionAgeMs)}</div>
          <div className={styles.statLabel}>
            transaction age{impact.state ? ` · ${impact.state}` : ''}
            {impact.stateAgeMs !== null && impact.state !== 'active' ? ` for ${formatDuration(impact.stateAgeMs)}` : ''}
          </div>
        </div>
        <div className={styles.stat}>
          <div className={styles.statLabel}>intents it is about</div>
          <IntentLinks refs={impact.intents} empty="none known" />
          {impact.waiterIntents.length > 0 && (
            <div className={styles.hint}>
              waiters are about: <IntentLinks refs={impact.waiterIntents.map((id) => ({ id, via: null }))} />
            </div>
          )}
        </div>
      </div>
      <p className={styles.hint}>
        {impact.applicationName || '(no application name)'}
        {impact.actor && <> · acting for console user {impact.actor}</>} · {impact.user ?? '?'} · <span className={styles.mono}>{impact.query?.slice(0, 160) ?? '—'}</span>
      </p>
      {impact.isWaiting && (
        <div className={`${styles.banner} ${styles.bannerWarn}`}>
          This backend is itself waiting for {impact.rootBlockers.length ? `backend ${impact.rootBlockers.join(', ')}` : 'another backend'}: stopping it
          frees only the sessions behind it; the root blocker stays.
        </div>
      )}
    </>
  );
}
