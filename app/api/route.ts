/**
 * `/api` itself (and `/api/`, which Next redirects here): no endpoint, answered by the same router as every other
 * path under /api/ (the catch-all beside it), so in the API's JSON error envelope pointing at the API document rather
 * than with the console's HTML 404.
 */
export const dynamic = 'force-dynamic';

export { GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS } from './[...path]/route';
