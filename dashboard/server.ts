import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { observeSandboxPool, type ProcessorContext } from '../pipelines/runtime/index.js';
import { checkoutRoot, ConfigError, errorMessage } from '../schemas/index.js';
import { resolveDashboardOptions, type DashboardOptions, type ResolvedDashboardOptions } from './options.js';
import { LoopWatcher, type Snapshot } from './snapshot.js';

/** A running dashboard: its address, its latest snapshot, and how to stop it. */
export interface Dashboard {
  /** e.g. `http://127.0.0.1:8321/` */
  readonly url: string;
  readonly options: ResolvedDashboardOptions;
  current(): Snapshot;
  /** Takes a snapshot now and pushes it to the pages if it changed. */
  refresh(): Promise<void>;
  close(): Promise<void>;
}

const require = createRequire(import.meta.url);
/** The browser builds of the charting libraries, next to each package's entry point. */
const vendorFile = (pkg: string, file: string): string => join(dirname(require.resolve(pkg)), file);

interface StaticFile {
  readonly path: () => string;
  readonly type: string;
}

/** Every file the server hands out, by URL path: nothing else on disk is reachable. */
const STATIC: Readonly<Record<string, StaticFile>> = {
  '/': { path: () => join(checkoutRoot(), 'dashboard', 'public', 'index.html'), type: 'text/html; charset=utf-8' },
  '/app.js': { path: () => join(checkoutRoot(), 'dashboard', 'public', 'app.js'), type: 'text/javascript; charset=utf-8' },
  '/app.css': { path: () => join(checkoutRoot(), 'dashboard', 'public', 'app.css'), type: 'text/css; charset=utf-8' },
  '/vendor/vega.min.js': { path: () => vendorFile('vega', 'vega.min.js'), type: 'text/javascript; charset=utf-8' },
  '/vendor/vega-lite.min.js': { path: () => vendorFile('vega-lite', 'vega-lite.min.js'), type: 'text/javascript; charset=utf-8' },
  '/vendor/vega-embed.min.js': { path: () => vendorFile('vega-embed', 'vega-embed.min.js'), type: 'text/javascript; charset=utf-8' },
};

const PROMETHEUS_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
/** A comment line on every event stream this often, so proxies and browsers keep an idle stream open. */
const KEEPALIVE_MS = 15_000;

/**
 * Serves the live dashboard: the page and its scripts, `/events` (server-sent events: a snapshot on
 * connect and each changed one after), `/snapshot.json`, and `/metrics` (Prometheus text format of this
 * process's registry). Listens once the first snapshot is taken.
 */
export async function startDashboard(context: ProcessorContext, options: DashboardOptions): Promise<Dashboard> {
  const resolved = resolveDashboardOptions(options);
  const unobservePool = resolved.pool ? observeSandboxPool(resolved.pool, 'default', resolved.registry) : () => undefined;
  const watcher = new LoopWatcher(context, resolved);
  const streams = new Set<ServerResponse>();
  const unsubscribe = watcher.subscribe((snapshot) => {
    const event = sseEvent(snapshot);
    for (const stream of streams) stream.write(event);
  });
  const keepalive = setInterval(() => {
    for (const stream of streams) stream.write(': keepalive\n\n');
  }, KEEPALIVE_MS);
  keepalive.unref();

  const server = createServer((request, response) => {
    try {
      handle(request, response);
    } catch (error) {
      if (!response.headersSent) response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' });
      response.end(`dashboard error: ${errorMessage(error)}\n`);
    }
  });
  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    const path = new URL(request.url ?? '/', 'http://dashboard').pathname;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('only GET and HEAD\n');
      return;
    }
    if (path === '/events') {
      response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
      if (request.method === 'HEAD') {
        response.end();
        return;
      }
      response.write(sseEvent(watcher.current));
      streams.add(response);
      request.on('close', () => streams.delete(response));
      response.on('error', () => streams.delete(response));
      return;
    }
    if (path === '/snapshot.json') {
      response.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(watcher.current));
      return;
    }
    if (path === '/metrics') {
      response.writeHead(200, { 'content-type': PROMETHEUS_TYPE, 'cache-control': 'no-store' }).end(resolved.registry.expose());
      return;
    }
    const file = STATIC[path];
    if (!file) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end(`no such page: ${path}\n`);
      return;
    }
    response.writeHead(200, { 'content-type': file.type, 'cache-control': 'no-cache' }).end(readFileSync(file.path()));
  };

  const stopAll = async (): Promise<void> => {
    clearInterval(keepalive);
    unsubscribe();
    unobservePool();
    for (const stream of streams) stream.end();
    streams.clear();
    await watcher.close();
  };
  try {
    await watcher.start();
    await listen(server, resolved);
  } catch (error) {
    await stopAll();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}/`,
    options: resolved,
    current: () => watcher.current,
    refresh: () => watcher.refresh(),
    close: async () => {
      await stopAll();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

const sseEvent = (snapshot: Snapshot): string => `event: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n`;

/** Listens, turning the address problems a user can fix (in use, not ours, privileged) into ConfigErrors. */
function listen(server: Server, options: ResolvedDashboardOptions): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: NodeJS.ErrnoException): void => {
      const where = `${options.host}:${options.port}`;
      const reasons: Record<string, string> = {
        EADDRINUSE: `${where} is in use; pick another port with --port (0 takes a free one)`,
        EADDRNOTAVAIL: `${options.host} is not an address of this machine; pick another with --host`,
        EACCES: `no permission to listen on ${where}; ports below 1024 need root, pick another with --port`,
        ENOTFOUND: `host ${options.host} is not known; pick another with --host`,
      };
      const reason = error.code ? reasons[error.code] : undefined;
      reject(reason ? new ConfigError(`the dashboard cannot listen: ${reason}`, { cause: error }) : error);
    };
    server.once('error', onError);
    server.listen(options.port, options.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
