import { authenticateRequest } from '@/lib/auth/request';
import { requestActor } from '@/lib/http/actor';
import { toErrorResponse, otherMethods } from '@/lib/http/respond';
import { liveEventStream, parseResumePosition } from '@/lib/live/stream';

/**
 * Server-sent events: every change committed by any console instance (Postgres LISTEN/NOTIFY → lib/live), with
 * database positions as event ids so a reconnecting page resumes without missing anything. See lib/live/stream.ts.
 * Only GET subscribes; the stream re-checks its credential while it lives (revoked, disabled, signed out or a role
 * change ends it), ends after a maximum lifetime, and one user holds a bounded number at a time.
 */
export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export async function GET(request: Request): Promise<Response> {
  try {
    const actor = await requestActor(request, 'intents.read');
    const roles = [...actor.roles].sort().join(',');
    const stillAllowed = async () => {
      try {
        const now = await authenticateRequest(request);
        return !!now && now.userId === actor.userId && [...now.roles].sort().join(',') === roles && now.roles.length > 0;
      } catch (err) {
        // A 401/403 from the credential is a revocation; anything else (the database) is decided at the next check.
        if (err && typeof err === 'object' && 'httpStatus' in err) return false;
        throw err;
      }
    };
    const since = parseResumePosition(request.headers.get('last-event-id'), new URL(request.url).searchParams.get('since'));
    return await liveEventStream(since, request.signal, { userId: actor.userId, stillAllowed });
  } catch (err) {
    return toErrorResponse(err);
  }
}

/**
 * HEAD answers what GET would (authorisation, headers) without opening a stream: Next would otherwise run GET and
 * drop the body, leaving a subscription and its timers behind for good.
 */
export async function HEAD(request: Request): Promise<Response> {
  try {
    await requestActor(request, 'intents.read');
    return new Response(null, { status: 200, headers: { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform' } });
  } catch (err) {
    const answer = toErrorResponse(err);
    return new Response(null, { status: answer.status, headers: answer.headers });
  }
}

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
