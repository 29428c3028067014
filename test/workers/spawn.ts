import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterEach } from 'vitest';

const root = join(import.meta.dirname, '..', '..');

export type WorkerProcess = { child: ChildProcess; output: () => string; exited: Promise<number | null> };

/** A real `npm run worker` process (node --import tsx scripts/worker.ts) against the test database. */
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


/**
 * `start(env)` for one test file: a worker process like spawnWorker's, and after each test whatever that test
 * started and left running is SIGKILLed and waited for, also when the test failed (a harness stops what it started).
 */
export function workersPerTest(): (env?: Record<string, string>) => WorkerProcess {
  const running = new Set<WorkerProcess>();
  afterEach(async () => {
    const left = [...running];
    for (const w of left) w.child.kill('SIGKILL');
    await Promise.all(left.map((w) => w.exited));
  });
  return (env = {}) => {
    const w = spawnWorker(env);
    running.add(w);
    void w.exited.then(() => running.delete(w));
    return w;
  };
}
