import { unknownEndpoint } from '@/lib/http/respond';

/** Any /api path that names no endpoint: the API's error envelope, not the console's HTML 404 page. */
export const dynamic = 'force-dynamic';

const notFound = async (request: Request) => unknownEndpoint(request);
export { notFound as GET, notFound as HEAD, notFound as POST, notFound as PUT, notFound as PATCH, notFound as DELETE, notFound as OPTIONS };
