import type { IncomingMessage, ServerResponse } from 'node:http';

export interface ReadinessProbe {
  name: string;
  check(): Promise<boolean>;
}

export interface OpsRoute {
  path: string;
  method: string;
  handler: (req: IncomingMessage, res: ServerResponse) => void;
}

/**
 * `/healthz` answers while the process runs; `/readyz` only when every dependency
 * (Redis, the Slack connection, the workers) is usable, so an orchestrator sends
 * no traffic to a replica that cannot act on it.
 */
export function opsRoutes(probes: ReadinessProbe[], metrics: () => Promise<string>): OpsRoute[] {
  return [
    {
      path: '/healthz',
      method: 'GET',
      handler: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      },
    },
    {
      path: '/readyz',
      method: 'GET',
      handler: (_req, res) => {
        void Promise.all(probes.map(async (p) => [p.name, await p.check().catch(() => false)] as const)).then((results) => {
          const failing = results.filter(([, ok]) => !ok).map(([name]) => name);
          const body = failing.length === 0 ? 'ready\n' : `not ready: ${failing.join(', ')}\n`;
          res.writeHead(failing.length === 0 ? 200 : 503, { 'content-type': 'text/plain' }).end(body);
        });
      },
    },
    {
      path: '/metrics',
      method: 'GET',
      handler: (_req, res) => {
        void metrics().then(
          (text) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(text),
          () => res.writeHead(500).end(),
        );
      },
    },
  ];
}
