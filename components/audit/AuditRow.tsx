import Link from 'next/link';
import { formatUtc } from '@/components/ui/time';
import { describeAudit } from '@/lib/audit/describe';
import type { AuditPage } from '@/lib/audit/log';
import { auditHref } from '@/lib/audit/url';
import { shortId } from '@/lib/console/ids';
import styles from './audit.module.css';

/** One entry: when, who, what and why, each of who, action and intent a link that narrows the log to it. */
export function AuditRow({ entry: e, filters }: { entry: AuditPage['items'][number]; filters: Record<string, string> }) {
  const line = describeAudit(e);
  return (
    <tr data-testid="audit-row" data-action={e.action}>
      <td className={styles.nowrap}>{formatUtc(e.at).replace(' UTC', '')}</td>
      <td className={styles.nowrap}>
        <Link href={auditHref({ ...filters, actor: e.actor })} title={`Only ${e.actor}'s actions`}>
          {e.actor}
        </Link>
      </td>
      <td className={styles.nowrap}>
        <Link href={auditHref({ ...filters, action: e.action })} title="Only this action">
          {line.label}
        </Link>
      </td>
      <td>
        {line.what}
        {line.link && (
          <>
            {' '}
            <Link href={line.link.href} className={styles.subtle}>
              {line.link.label}
            </Link>
          </>
        )}
      </td>
      <td className={styles.nowrap}>
        {e.intentId ? (
          <>
            <Link href={`/intents/${e.intentId}`} className="mono">
              {shortId(e.intentId)}
            </Link>{' '}
            <Link href={auditHref({ ...filters, intent: e.intentId })} className={styles.subtle} title="Only this intent's entries">
              filter
            </Link>
          </>
        ) : (
          <span className={styles.subtle}>—</span>
        )}
      </td>
      <td className={styles.reason}>{line.reason ?? <span className={styles.subtle}>—</span>}</td>
    </tr>
  );
}
