import styles from '@/components/locks/console.module.css';
import { RelativeTime } from '@/components/ui/RelativeTime';
import type { WorkersOverview } from '@/lib/workers/queries';

/** The queue by state, the rescues so far, and how long the oldest due intent has waited. */
export function QueueTiles({ data }: { data: WorkersOverview }) {
  return (
    <div className={styles.queueTiles} aria-label="Queue depth">
      <div className={styles.queueTilesGrid}>
        {(
          [
            ['ready', data.queue.ready, 'due now'],
            ['scheduled', data.queue.scheduled, 'waiting for their time'],
            ['running', data.queue.running, 'claimed'],
            ['waiting', data.queue.waiting, 'a bridge waits for an answer; no worker held'],
            ['stale claims', data.queue.stale, 'lease ran out, not yet rescued'],
            ['failed', data.queue.failed, 'gave up'],
            ['rescued', data.totals.rescued, 'stale claims rescued, all time'],
          ] as const
        ).map(([label, value, hint]) => (
          <div key={label} className={styles.stat} title={hint}>
            <div className={styles.statValue}>{value}</div>
            <div className={styles.statLabel}>{label}</div>
          </div>
        ))}
        {/* The queue's latency, as Sidekiq, Oban and River show it: how long the oldest due intent has waited. */}
        <div className={styles.stat} title="How long the longest-waiting due intent has waited for a worker" data-testid="oldest-ready">
          <div className={styles.statValue}>{data.oldestReadySince ? <RelativeTime iso={data.oldestReadySince} /> : '—'}</div>
          <div className={styles.statLabel}>oldest ready, due since</div>
        </div>
      </div>
    </div>
  );
}
