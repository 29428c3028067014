import type { RowLockHolder as RowHolder } from '@/lib/locks/holders';
import { ApiError } from './intents-client';

/** Which of these intents' rows are locked right now, and by which backend (GET /api/console/locks/holders). */
export async function fetchRowHolders(ids: readonly string[]): Promise<RowHolder[]> {
  const res = await fetch(`/api/console/locks/holders?${new URLSearchParams({ ids: [...ids].sort().join(',') })}`, { headers: { accept: 'application/json' }, cache: 'no-store' });
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: { code?: string; message?: string } } | null;
    throw new ApiError(res.status, body?.error?.code ?? 'http_error', body?.error?.message ?? `The server answered ${res.status}.`);
  }
  return ((await res.json()) as { holders: RowHolder[] }).holders;
}
