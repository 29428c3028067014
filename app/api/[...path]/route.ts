import { apiRouter } from '@/lib/http/api-router';

/**
 * The whole JSON API, for requests Next routes: under `next dev` and `next start`, and whatever under /api/ the
 * console's server leaves to Next (a path it does not take as it is: percent-escapes, a trailing slash). They go to
 * the same router the console's server answers the rest with (lib/http/api-router.ts, driven by the operations
 * table): one table, no route file per operation.
 */
export const dynamic = 'force-dynamic';

const api = (request: Request) => apiRouter().handle(request);
export { api as GET, api as HEAD, api as POST, api as PUT, api as PATCH, api as DELETE, api as OPTIONS };
