import { requestActor } from '@/lib/http/actor';
import { toErrorResponse, otherMethods } from '@/lib/http/respond';
import { liveEventStream, parseResumePosition } from '@/lib/live/stream';

/**
 * Server-sent events: every change committed by any console instance (Postgres LISTEN/NOTIFY → lib/live), with
 * database positions as event ids so a reconnecting page resumes without missing anything. See lib/live/stream.ts.
 */
export const runtime = 'nodejs';
export const dynamic = 'force-dynamic';

export async function GET(request: Request): Promise<Response> {
  try {
    await requestActor(request, 'intents.read');
    const since = parseResumePosition(request.headers.get('last-event-id'), new URL(request.url).searchParams.get('since'));
    return await liveEventStream(since, request.signal);
  } catch (err) {
    return toErrorResponse(err);
  }
}

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
