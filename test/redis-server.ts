import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throw-away redis-server (Debian's `redis-server` package) on a free port, without persistence: what the tests
 * run the Redis backend against, and what the restart test stops and starts again on the same port.
 */
export function redisServerInstalled(): boolean {
  return !spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export type RedisServer = {
  url: string;
  port: number;
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** SIGKILL, and stay down until `up()` (Redis unreachable: connections refused on its port). */
  down(): Promise<void>;
  /** Start again on the same port after `down()` (nothing when it is running). */
  up(): Promise<void>;
};

export async function startRedisServer(): Promise<RedisServer> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'bridge-redis-'));
  let child: ChildProcess | undefined;

  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const proc = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child = proc;
      let output = '';
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          proc.stdout?.off('data', onData);
          proc.stdout?.resume();
          resolve();
        }
      };
      proc.stdout?.on('data', onData);
      proc.stderr?.resume();
      proc.once('exit', (code) => reject(new Error(`redis-server exited (${code}) before it was ready:\n${output}`)));
      proc.once('error', reject);
    });

  const stop = async () => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill('SIGKILL');
    });
  };

  await launch();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    stop: async () => {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
    // SIGKILL and start again: everything Redis held in memory is gone, as after a crash or a failover to a
    // replica that had not caught up.
    restart: async () => {
      await stop();
      await launch();
    },
    down: stop,
    up: async () => {
      if (child && child.exitCode === null) return;
      await launch();
    },
  };
}
