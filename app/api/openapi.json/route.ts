import { NextResponse } from 'next/server';
import { handler, otherMethods } from '@/lib/http/respond';
import { openApiDocument } from '@/lib/openapi/document';

export const dynamic = 'force-dynamic';

/** The OpenAPI 3.1 document of this API, generated from the schemas the routes validate with. Open, like health. */
export const GET = handler(async () => NextResponse.json(openApiDocument(), { headers: { 'Cache-Control': 'no-cache' } }));

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
