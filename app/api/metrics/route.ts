import { requireMetricsAccess } from '@/lib/auth/request';
import { handler, otherMethods } from '@/lib/http/respond';
import { metricsText } from '@/lib/metrics/registry';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

/** Prometheus scrape target: open, or Bearer METRICS_TOKEN when that is set. */
export const GET = handler(async (request: Request) => {
  requireMetricsAccess(request);
  const { body, contentType } = await metricsText();
  return new Response(body, { status: 200, headers: { 'Content-Type': contentType, 'Cache-Control': 'no-store' } });
});

export const { POST, PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET');
