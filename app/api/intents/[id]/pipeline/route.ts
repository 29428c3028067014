import { NextResponse } from 'next/server';
import { requestActor } from '@/lib/http/actor';
import { handler, otherMethods, readInput } from '@/lib/http/respond';
import { listPipelineRuns, runPipeline, runPipelineInputSchema } from '@/lib/pipeline/run';
import { resolveIntentId } from '@/lib/search/ids';

export const dynamic = 'force-dynamic';

/** Runs the BridgeSet on the intent: 200 `{ intent, run }`, 423 `lock_timeout` while another execution holds it. */
export const POST = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  const actor = await requestActor(request, 'pipeline.run');
  const result = await runPipeline(await readInput(request, runPipelineInputSchema, { id: (await params).id }), actor, { door: 'api' });
  return NextResponse.json(result);
});

/** The intent's latest pipeline runs with their steps, newest first. */
export const GET = handler(async (request, { params }: { params: Promise<{ id: string }> }) => {
  await requestActor(request, 'intents.read');
  return NextResponse.json({ runs: await listPipelineRuns(await resolveIntentId((await params).id)) });
});

export const { PUT, PATCH, DELETE, OPTIONS } = otherMethods('GET', 'POST');
