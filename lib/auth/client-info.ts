import { env } from '@/lib/env';
import type { ClientInfo } from './types';

/**
 * The client's address and user agent, for the session list and the per-address sign-in limit. X-Forwarded-For
 * is set by whoever sends the request unless a trusted proxy overwrites it, so it is read only with TRUST_PROXY;
 * otherwise the address is unknown and only the per-username limit applies.
 */
const IP_PATTERN = /^[0-9a-fA-F:.]{2,45}$/;

export function clientInfoFromHeaders(headers: Headers, trustProxy = env().TRUST_PROXY): ClientInfo {
  let ip: string | null = null;
  if (trustProxy) {
    const forwarded = headers.get('x-forwarded-for')?.split(',')[0]?.trim() ?? headers.get('x-real-ip')?.trim();
    if (forwarded && IP_PATTERN.test(forwarded)) ip = forwarded;
  }
  return { ip, userAgent: headers.get('user-agent')?.slice(0, 512) ?? null };
}
