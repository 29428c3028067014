import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';

/**
 * Raw HTTP for hostile requests: Playwright's and fetch's clients normalise URLs (re-encoding `%FF`, dropping
 * control characters) and refuse some methods, so the requests an attacker would send are written by hand here.
 */
export type RawAnswer = { status: number; headers: Record<string, string | string[] | undefined>; body: string };

export function raw(
  baseURL: string,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: string | Buffer; chunks?: AsyncIterable<Buffer>; abortAfterMs?: number },
): Promise<RawAnswer | null> {
  const url = new URL(baseURL);
  // Node's client sends a DELETE's body without any framing unless told its length: always say it.
  const headers = { ...options.headers };
  if (options.body !== undefined && !Object.keys(headers).some((h) => /^(content-length|transfer-encoding)$/i.test(h))) headers['content-length'] = String(Buffer.byteLength(options.body));
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    let answered: RawAnswer | null = null;
    const req = httpRequest({ host: url.hostname, port: url.port, method: options.method ?? 'GET', path: options.path, headers, agent: false }, (res) => {
      let body = '';
      answered = { status: res.statusCode!, headers: res.headers, body: '' };
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        if (body.length < 64 * 1024) body += c;
        answered!.body = body;
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode!, headers: res.headers, body });
      });
      res.on('error', () => resolve(answered));
      res.on('close', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    // A refused upload may be cut off by the server: that is an answer too (null), never a test failure by itself.
    req.on('error', () => resolve(answered));
    if (options.abortAfterMs !== undefined) timer = setTimeout(() => req.destroy(), options.abortAfterMs);
    if (options.chunks) {
      void (async () => {
        try {
          for await (const chunk of options.chunks!) {
            if (req.destroyed) return;
            if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
          }
          req.end();
        } catch {
          req.destroy();
        }
      })();
    } else req.end(options.body);
  });
}

export async function* filler(totalBytes: number, chunkBytes = 64 * 1024): AsyncIterable<Buffer> {
  const chunk = Buffer.alloc(chunkBytes, 0x20);
  for (let sent = 0; sent < totalBytes; sent += chunkBytes) yield chunk;
}

/** One metric's value from the Prometheus text exposition (the first sample with that name). */
export function metric(exposition: string, name: string): number {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, 'm').exec(exposition);
  if (!match) throw new Error(`metric ${name} not found`);
  return Number(match[1]);
}

/**
 * Bytes written straight onto a socket, and every byte the server wrote back until it closed the connection (or
 * `waitMs` passed: a server that never answers gives ''). For what no HTTP client sends: no Host, CONNECT, Upgrade.
 */
export function rawSocket(baseURL: string, text: string, waitMs = 10_000): Promise<string> {
  const url = new URL(baseURL);
  return new Promise((resolve) => {
    const socket = connect(Number(url.port), url.hostname, () => socket.write(text));
    let out = '';
    const timer = setTimeout(() => socket.destroy(), waitMs);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (out += d));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    socket.on('error', () => undefined);
  });
}
