/**
 * One graphile-worker process for the workers' benchmark (scripts/bench-workers.ts): its fastest setup on Node 20
 * (0.17.3: 10 jobs at once, a local queue of 10 fetched ahead, completions batched with no delay, a pool of 12), a
 * task that does nothing. Prints `ready` once it is running; SIGTERM stops it.
 */
import { Logger, run } from 'graphile-worker';

async function main() {
  const runner = await run({
    noHandleSignals: true,
    taskList: { noop: async () => undefined },
    preset: {
      worker: {
        connectionString: process.env.DATABASE_URL,
        concurrentJobs: 10,
        maxPoolSize: 12,
        localQueue: { size: 10 },
        completeJobBatchDelay: 0,
        pollInterval: Number(process.env.GRAPHILE_POLL_MS ?? 2000),
        // Quiet: its start-up and per-job lines would cost the run as much as the jobs.
        logger: new Logger(() => () => undefined),
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
