import type { Actor } from '@/lib/intents/types';

/**
 * Who is acting on an API request. Until sign-in and API tokens exist (issue 5) every caller is the anonymous
 * `api` actor; the audit log's actor is never taken from the request body.
 */
export async function requestActor(_request: Request): Promise<Actor> {
  return { name: 'api' };
}
