import Link from 'next/link';
import type { ActionError } from '@/lib/console/action-result';
import { lockHolderLink } from '@/lib/console/messages';

/** Beside a lock refusal (423): a link to the Locks page with the backend that held the lock selected. */
export function LockHolderLink({ error }: { error: Pick<ActionError, 'code' | 'details'> }) {
  const link = lockHolderLink(error);
  if (!link) return null;
  return (
    <>
      {' '}
      <Link href={link.href} data-testid="lock-holder-link">
        {link.pid !== null ? `See backend ${link.pid} on the Locks page →` : 'See the Locks page →'}
      </Link>
    </>
  );
}
