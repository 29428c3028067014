import Link from 'next/link';
import type { IntentVia } from '@/lib/locks/types';
import styles from './console.module.css';

const VIA: Record<IntentVia, string> = {
  label: 'label',
  'row-waits': 'row it waits on',
  'row-holds': 'row it holds',
};

/** Intent ids linked to their pages, each with how we know (engine label, or the locked row via ctid). */
export function IntentLinks({ refs, empty = '—' }: { refs: { id: string; via: IntentVia | null }[]; empty?: string }) {
  if (!refs.length) return <span className={styles.hint}>{empty}</span>;
  return (
    <span>
      {refs.map((ref, i) => (
        <span key={ref.id} data-testid="intent-ref" data-intent-id={ref.id}>
          {i > 0 && ', '}
          <Link className={styles.intentLink} href={`/intents/${ref.id}`} title={ref.id}>
            {ref.id.slice(0, 8)}
          </Link>
          {ref.via && <span className={styles.via}>({VIA[ref.via]})</span>}
        </span>
      ))}
    </span>
  );
}
