/**
 * One graphile-worker process for the workers' benchmark (scripts/bench-workers.ts): its fastest setup on Node 20
 * (0.17.3: 10 jobs at once, a local queue of 10 fetched ahead, completions batched with no delay, the pool the benchmark sizes: GRAPHILE_POOL).
 * Its task is one of:
 * - `noop` (the default): does nothing, the queue alone;
 * - `pipeline` (GRAPHILE_TASK=pipeline): runs the job's intent through this project's pipeline with the one no-op
 *   bridge (runPipeline, as the API's door does: the execution lock, the run and its step, their audit, the event
 *   out), which is what carrying the pipeline on graphile-worker instead of on the workers would do per intent.
 * Prints `ready` once it is running; SIGTERM stops it.
 */
import { Logger, run, type Task } from 'graphile-worker';

async function pipelineTask(): Promise<Task> {
  await import('./bench-bridges');
  const { runPipeline } = await import('../lib/pipeline/run');
  return async (payload) => {
    const { id } = payload as { id: string };
    await runPipeline({ id }, { name: 'graphile-worker' }, { bridges: ['noop'], door: 'api' });
  };
}

async function main() {
  const task = process.env.GRAPHILE_TASK ?? 'noop';
  const taskList: Record<string, Task> = task === 'pipeline' ? { pipeline: await pipelineTask() } : { noop: async () => undefined };
  const runner = await run({
    noHandleSignals: true,
    taskList,
    preset: {
      worker: {
        connectionString: process.env.DATABASE_URL,
        concurrentJobs: 10,
        maxPoolSize: Number(process.env.GRAPHILE_POOL),
        localQueue: { size: 10 },
        completeJobBatchDelay: 0,
        pollInterval: Number(process.env.GRAPHILE_POLL_MS ?? 2000),
        // Its start-up and per-job lines would cost the run as much as the jobs, so only errors are printed. An
        // error ends the process: a batch of completions it could not write (a connection refused, say) leaves its
        // jobs locked for hours, and the benchmark, told by the exit, stops with the reason instead of waiting.
        logger: new Logger(() => (level, message) => {
          if (String(level) !== 'error') return;
          process.stderr.write(`[bench:graphile-worker] ${message}\n`);
          process.exit(1);
        }),
      },
    },
  });
  process.stdout.write('ready\n');
  process.once('SIGTERM', () => {
    void runner.stop().then(() => process.exit(0));
  });
  await runner.promise;
}

main().catch((err) => {
  console.error('[bench:graphile-worker]', err);
  process.exit(1);
});
