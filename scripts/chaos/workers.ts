import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { root } from '../next-server';

/**
 * `npm run worker` processes for the chaos run: each runs the pipeline on claimed intents and an outbox relay
 * (when NATS_URL is set). Run through tsx as a loader in the process itself, so a SIGKILL reaches the worker and
 * not a wrapper. A worker is up once its registry row says so (the runner polls it); kill() is a crash, stop() is
 * the graceful SIGTERM.
 */
export type WorkerProcess = { name: string; pid: number; kill: () => Promise<void>; stop: () => Promise<void>; exited: () => boolean };

export function startWorker(options: { name: string; logFile: string; env: Record<string, string> }): WorkerProcess {
  const log = createWriteStream(options.logFile);
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join(root, 'scripts', 'worker.ts')], {
    cwd: root,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  const exit = (signal: NodeJS.Signals, forceAfterMs?: number) =>
    gone()
      ? Promise.resolve()
      : new Promise<void>((done) => {
          const force = forceAfterMs === undefined ? null : setTimeout(() => child.kill('SIGKILL'), forceAfterMs);
          child.once('exit', () => {
            if (force) clearTimeout(force);
            done();
          });
          child.kill(signal);
        });
  return { name: options.name, pid: child.pid ?? -1, kill: () => exit('SIGKILL'), stop: () => exit('SIGTERM', 20_000), exited: gone };
}
