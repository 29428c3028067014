import { apiRequest, resetAuth, userWithToken } from '../auth-helpers';
import { apiRoute } from '@/lib/http/api-router';

const { GET: listRoute, POST: createRoute } = apiRoute('/api/intents');
const { GET: getRoute } = apiRoute('/api/intents/{id}');
const { GET: auditRoute } = apiRoute('/api/intents/{id}/audit');
const { POST: statusRoute } = apiRoute('/api/intents/{id}/status');
const { POST: reevalRoute } = apiRoute('/api/intents/{id}/reeval');
const { POST: bulkRoute } = apiRoute('/api/intents/bulk-status');
const { GET: pipelineRunsRoute, POST: pipelineRoute } = apiRoute('/api/intents/{id}/pipeline');
const { GET: rerunPlanRoute } = apiRoute('/api/intents/{id}/pipeline/plan');
const { POST: answerRoute } = apiRoute('/api/intents/{id}/pipeline/answers');
const { GET: healthRoute } = apiRoute('/api/health');

/**
 * Calls the JSON API's operations directly through its router (lib/http/api-router.ts apiRoute): a real Request with
 * a real API token (of a user who may do everything the intent endpoints offer), and the path's values.
 */
export type ApiResponse<T = any> = { status: number; body: T; headers: Headers }; // eslint-disable-line @typescript-eslint/no-explicit-any

/** A body to send as is: a string is sent verbatim (malformed JSON), `headers` can override the Content-Type. */
export type RawBody = { raw: string | undefined; headers?: Record<string, string> };

/** What Next hands a route handler: the dynamic segment (routes without one ignore it). */
type RouteContext = { params: Promise<{ id: string }> };

let token: string | undefined;
let username: string | undefined;

/** Creates the caller; call in beforeAll of each API test file (auth tables start empty). */
export async function signInApiCaller(): Promise<{ username: string }> {
  await resetAuth();
  const made = await userWithToken(['operator', 'reviewer']);
  token = made.token;
  username = made.user.username;
  return { username };
}

async function send(route: (request: Request, context: RouteContext) => Promise<Response>, path: string, method: 'GET' | 'POST', body?: unknown, id?: string): Promise<ApiResponse> {
  if (!token) throw new Error('signInApiCaller() first');
  const raw = typeof body === 'object' && body !== null && 'raw' in body ? (body as RawBody) : undefined;
  const request = apiRequest(path, {
    method,
    token,
    body: raw ? raw.raw : body,
    headers: raw?.headers,
  });
  const response = await route(request, { params: Promise.resolve({ id: id ?? '' }) });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, headers: response.headers };
}

export const api = {
  create: (body: unknown) => send(createRoute, '/api/intents', 'POST', body),
  list: (query: Record<string, string> | string = {}) =>
    send(listRoute, `/api/intents?${typeof query === 'string' ? query : new URLSearchParams(query).toString()}`, 'GET'),
  get: (id: string) => send(getRoute, `/api/intents/${encodeURIComponent(id)}`, 'GET', undefined, id),
  audit: (id: string) => send(auditRoute, `/api/intents/${encodeURIComponent(id)}/audit`, 'GET', undefined, id),
  status: (id: string, body: unknown) => send(statusRoute, `/api/intents/${encodeURIComponent(id)}/status`, 'POST', body, id),
  reeval: (id: string, body: unknown) => send(reevalRoute, `/api/intents/${encodeURIComponent(id)}/reeval`, 'POST', body, id),
  bulk: (body: unknown) => send(bulkRoute, '/api/intents/bulk-status', 'POST', body),
  pipeline: (id: string, body?: unknown) => send(pipelineRoute, `/api/intents/${encodeURIComponent(id)}/pipeline`, 'POST', body, id),
  rerunPlan: (id: string, fromBridge: string) => send(rerunPlanRoute, `/api/intents/${encodeURIComponent(id)}/pipeline/plan?fromBridge=${encodeURIComponent(fromBridge)}`, 'GET', undefined, id),
  answer: (id: string, body?: unknown) => send(answerRoute, `/api/intents/${encodeURIComponent(id)}/pipeline/answers`, 'POST', body, id),
  pipelineRuns: (id: string) => send(pipelineRunsRoute, `/api/intents/${encodeURIComponent(id)}/pipeline`, 'GET', undefined, id),
  health: async (): Promise<ApiResponse> => {
    const response = await healthRoute(new Request('http://localhost:3000/api/health'));
    return { status: response.status, body: await response.json(), headers: response.headers };
  },
};

/** The fields a 400 names, from `error.details.fields[].field`. */
export function namedFields(res: ApiResponse): string[] {
  return (res.body?.error?.details?.fields ?? []).map((f: { field: string }) => f.field);
}
