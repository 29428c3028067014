import Link from 'next/link';
import { LockHolderLink } from '@/components/locks/LockHolderLink';
import type { ActionError } from '@/lib/console/action-result';
import { errorTitle } from '@/lib/console/messages';
import styles from './intents.module.css';

/**
 * A refused or failed change, said once: a title by its code, the domain's own message, and a way back in when the
 * session has ended (`signInNext`: where to return after signing in).
 */
export function ActionErrorAlert({ error, signInNext, style }: { error: ActionError; signInNext?: string; style?: React.CSSProperties }) {
  return (
    <div className={styles.alert} role="alert" style={style}>
      <strong>{errorTitle(error)}.</strong> {error.message}
      <LockHolderLink error={error} />
      {signInNext && error.code === 'unauthenticated' && (
        <>
          {' '}
          <Link href={`/sign-in?next=${signInNext}`}>Sign in</Link>
        </>
      )}
    </div>
  );
}
