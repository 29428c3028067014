import { Forbidden } from '@/components/auth/Forbidden';
import { ReplayView } from '@/components/replay/ReplayView';
import { can } from '@/lib/auth/permissions';
import { requirePageUser } from '@/lib/auth/server';
import { concurrencySettings, env } from '@/lib/env';
import { replayAllowed } from '@/lib/replay/runner';
import { resolveRunRef } from '@/lib/replay/runs';
import { describeScenarios } from '@/lib/replay/scenarios';
import { resolveTargets } from '@/lib/replay/targets';

export const dynamic = 'force-dynamic';
export const metadata = { title: 'Replay · Bridge Console' };

const PROBLEM: Record<'missing' | 'several' | 'invalid', string> = {
  missing: 'no replay run has that id',
  several: 'several replay runs start with it: give more of the id',
  invalid: 'it is not a run id (the whole id, or its first 8 characters or more)',
};

/** A run named in the link (`?run=`, `?against=`), by its whole id or the short one the page shows; why not, otherwise. */
async function runParam(v: unknown): Promise<{ id: string | null; problem: string | null }> {
  if (typeof v !== 'string' || !v.trim()) return { id: null, problem: null };
  const found = await resolveRunRef(v);
  return 'id' in found ? { id: found.id, problem: null } : { id: null, problem: `The link’s run “${v.slice(0, 40)}” is not shown: ${PROBLEM[found.problem]}.` };
}

export default async function ReplayPage({ searchParams }: { searchParams: Promise<Record<string, string | string[] | undefined>> }) {
  const params = await searchParams;
  const run = await runParam(params.run);
  const runId = run.id;
  const against = runId ? (await runParam(params.against)).id : null;
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
      linkProblem={run.problem}
    />
  );
}
