import { Forbidden } from '@/components/auth/Forbidden';
import { WorkersView } from '@/components/workers/WorkersView';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { env } from '@/lib/env';
import { registeredBridges } from '@/lib/pipeline/bridges';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Workers · Bridge Console' };

export default async function WorkersPage() {
  const me = await requirePageUser('/workers');
  if (!can(me, 'intents.read')) return <Forbidden permission="intents.read" />;
  const e = env();
  // In the BridgeSet's own order (the order its runs take), which the registry's is not.
  const registered = new Map(registeredBridges().map((b) => [b.name, b]));
  const bridges = e.PIPELINE_BRIDGES.flatMap((name) => {
    const b = registered.get(name);
    return b ? [{ name: b.name, description: b.description, accepts: [...b.accepts] }] : [];
  });
  return (
    <WorkersView
      canControl={can(me, 'pipeline.run')}
      bridgeSet={e.PIPELINE_BRIDGES}
      bridges={bridges}
      settings={{ leaseMs: e.WORKER_LEASE_MS, maxAttempts: e.WORKER_MAX_ATTEMPTS, retryBaseMs: e.WORKER_RETRY_BASE_MS, retryMaxMs: e.WORKER_RETRY_MAX_MS }}
    />
  );
}
