import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

export type WorkerProcess = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

/** A real `npm run worker` process (tsx scripts/worker.ts) against the test database. */
export function spawnWorker(env: Record<string, string> = {}): WorkerProcess {
  let output = '';
  // tsx as a loader in this very process (not the tsx CLI, which runs the script in a child): a SIGKILL must reach
  // the worker itself.
  const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'worker.ts')], {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: process.env.DATABASE_URL!,
      WORKER_POLL_MS: '50',
      WORKER_HEARTBEAT_MS: '200',
      WORKER_RESCUE_MS: '100',
      WORKER_RETRY_BASE_MS: '10',
      WORKER_RETRY_JITTER_MS: '5',
      PIPELINE_BRIDGE_MODULES: 'test/workers/bridges.fixture.ts',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

