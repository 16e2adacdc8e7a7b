import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { opsRoutes, type ReadinessProbe } from '../../../src/http/ops-endpoints.ts';

let server: Server | undefined;

afterEach(async () => {
  await new Promise((r) => server?.close(r));
  server = undefined;
});

/** Serves the routes the way Bolt's receivers do: by path and method. */
async function serve(probes: ReadinessProbe[], metrics: () => Promise<string> = () => Promise.resolve('')): Promise<string> {
  // The probes' deadline passes once every probe that answers at once has answered: no race with the wall clock.
  const routes = opsRoutes(probes, metrics, { probeTimeoutMs: 50, clock: { sleep: () => new Promise((r) => setImmediate(r)) } });
  server = createServer((req, res) => {
    const route = routes.find((r) => r.path === req.url && r.method === req.method);
    if (route) route.handler(req, res);
    else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe('opsRoutes', () => {
  it('answers /readyz with 503 naming every probe that fails, throws or does not answer in time', async () => {
    const base = await serve([
      { name: 'redis', check: () => new Promise(() => undefined) },
      { name: 'slack', check: () => Promise.resolve(true) },
      { name: 'workers', check: () => Promise.resolve(false) },
      { name: 'store', check: () => Promise.reject(new Error('down')) },
    ]);

    const response = await fetch(`${base}/readyz`);

    expect(response.status).toBe(503);
    expect(await response.text()).toBe('not ready: redis, workers, store\n');
  });

  it('answers /readyz with 200 when every probe passes, and /healthz regardless', async () => {
    const base = await serve([{ name: 'redis', check: () => Promise.resolve(true) }]);

    expect([(await fetch(`${base}/readyz`)).status, (await fetch(`${base}/healthz`)).status]).toEqual([200, 200]);
  });

  it('serves /metrics as Prometheus text, and 500 when the registry fails', async () => {
    let fail = false;
    const base = await serve([], () => (fail ? Promise.reject(new Error('boom')) : Promise.resolve('up 1\n')));

    const ok = await fetch(`${base}/metrics`);
    fail = true;
    const failed = await fetch(`${base}/metrics`);

    expect([ok.status, ok.headers.get('content-type'), await ok.text()]).toEqual([
      200,
      'text/plain; version=0.0.4; charset=utf-8',
      'up 1\n',
    ]);
    expect(failed.status).toBe(500);
  });
});
