import { readAfterCookieName, readAfterSetCookie, readCookie } from '@/lib/auth/cookies';
import type { AuthActor } from '@/lib/auth/types';
import { READ_AFTER_HEADER } from '@/lib/db/lsn';
import { commitPosition, furthest, onPrimary, readReplicas, readServedBy, rememberTokenPosition, tokenPosition, withReadScope } from '@/lib/db/read';
import { JsonAnswer } from './api-handlers';

/**
 * Read-your-writes at the JSON API's door (lib/db/read.ts has the mechanism). A read (GET, HEAD) may be served by a
 * replica that has replayed the caller's last command: its position is the furthest of the `Bridge-Read-After`
 * header a client echoes, this process's memory of the caller's token, and the session's read-after cookie. A
 * command runs with every read on the primary; its answer carries `Bridge-Commit-Lsn` (and, for a session, the
 * cookie), which the caller's next reads wait for. A read's answer says where it was served (`Bridge-Read-Source`).
 * Without read replicas the handler runs as it is, with nothing asked and no header added.
 */
export { READ_AFTER_HEADER };
export const COMMIT_LSN_HEADER = 'Bridge-Commit-Lsn';
export const READ_SOURCE_HEADER = 'Bridge-Read-Source';

type Answer = Response | JsonAnswer;

export async function withReadYourWrites(request: Request, method: string, actor: AuthActor, run: () => Promise<Answer>): Promise<Answer> {
  if (!readReplicas()) return run();
  if (method === 'GET' || method === 'HEAD') {
    const remembered = actor.via === 'token' ? tokenPosition(actor.credentialId) : readCookie(request.headers.get('cookie'), readAfterCookieName());
    const after = furthest(request.headers.get(READ_AFTER_HEADER), remembered);
    return withReadScope(after, async () => {
      const answer = await run();
      const source = readServedBy();
      return source ? withHeaders(answer, { [READ_SOURCE_HEADER]: source }) : answer;
    });
  }
  const answer = await onPrimary(run);
  const lsn = await commitPosition().catch(() => null);
  if (!lsn) return answer;
  if (actor.via === 'token') rememberTokenPosition(actor.credentialId, lsn);
  return withHeaders(answer, { [COMMIT_LSN_HEADER]: lsn, ...(actor.via === 'session' ? { 'Set-Cookie': readAfterSetCookie(lsn) } : {}) });
}

function withHeaders(answer: Answer, extra: Record<string, string>): Answer {
  if (answer instanceof JsonAnswer) return new JsonAnswer(answer.body, answer.status, { ...answer.headers, ...extra });
  const headers = new Headers(answer.headers);
  for (const [name, value] of Object.entries(extra)) headers.append(name, value);
  return new Response(answer.body, { status: answer.status, statusText: answer.statusText, headers });
}
