import { currentUser, rememberCommitInSession } from '@/lib/auth/server';
import { onPrimary } from '@/lib/db/read';
import type { ActionResult } from '@/lib/console/action-result';
import { errorBodyFor, namesLockHolders } from '@/lib/locks/mask';
import { asDomainError } from './respond';

const UNEXPECTED = 'The server failed to handle this request. Try again, and report it if it persists.';

/**
 * The server actions' one wrapper: the data, or the error as the page shows it. Actions run with every read on the
 * primary, and after a successful one the browser's read-after cookie holds the commit's position (lib/db/read.ts). Expected failures (validation,
 * conflicts, lock timeouts, a lost database) come back as their domain error (a lock refusal's holder queries masked
 * as the Locks page masks them, by who is signed in); anything else is logged and answered with `unexpected`, never
 * thrown at the page.
 */
export async function runAction<T>(what: string, fn: () => Promise<T>, unexpected = UNEXPECTED, tag = 'actions'): Promise<ActionResult<T>> {
  try {
    // A command reads the present (the primary); its author's next reads wait for a replica to replay it.
    const data = await onPrimary(fn);
    await rememberCommitInSession();
    return { ok: true, data };
  } catch (err) {
    const known = asDomainError(err);
    if (known) {
      const body = known.toBody();
      return { ok: false, error: namesLockHolders(body) ? errorBodyFor(body, await currentUser().catch(() => null)) : body };
    }
    console.error(`[${tag}] ${what} failed unexpectedly:`, err);
    return { ok: false, error: { code: 'internal_error', message: unexpected } };
  }
}
