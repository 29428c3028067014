import { Forbidden } from '@/components/auth/Forbidden';
import { ReplayView } from '@/components/replay/ReplayView';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { concurrencySettings, env } from '@/lib/env';
import { replayAllowed } from '@/lib/replay/runner';
import { describeScenarios } from '@/lib/replay/scenarios';
import { resolveTargets } from '@/lib/replay/targets';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Replay · Bridge Console' };

const uuidParam = (v: unknown) => (typeof v === 'string' && /^[0-9a-f-]{36}$/i.test(v) ? v : null);

export default async function ReplayPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const runId = uuidParam(params.run);
  const against = runId ? uuidParam(params.against) : null;
  const me = await requirePageUser(runId ? `/replay?run=${runId}${against ? `&against=${against}` : ''}` : '/replay');
  if (!can(me, 'replay.read')) return <Forbidden permission="replay.read" />;
  const guard = replayAllowed();
  let targets = null;
  let targetsProblem: string | null = null;
  try {
    targets = resolveTargets(env().REPLAY_TARGETS);
  } catch (err) {
    targetsProblem = err instanceof Error ? err.message : String(err);
  }
  return (
    <ReplayView
      environment={env().BRIDGE_ENV}
      guard={guard}
      canRun={can(me, 'replay.run')}
      settings={concurrencySettings()}
      targets={targets}
      targetsProblem={targetsProblem}
      scenarios={describeScenarios()}
      initialRunId={runId}
      initialAgainst={against}
    />
  );
}
