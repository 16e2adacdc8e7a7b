import type { IncomingMessage, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../time/clock.ts';
import { withDeadline } from '../time/deadline.ts';

export interface ReadinessProbe {
  name: string;
  check(): Promise<boolean>;
}

export interface OpsRoute {
  path: string;
  method: string;
  handler: (req: IncomingMessage, res: ServerResponse) => void;
}

export interface OpsRoutesOptions {
  /** A probe that has not answered within this many ms counts as failing; default 2000. */
  probeTimeoutMs?: number;
  /** The clock the probes' bound runs on; default the system's. */
  clock?: Pick<Clock, 'sleep'>;
}

/** A probe that hangs (a Redis command queued while the connection is down) fails instead of holding `/readyz`. */
function within(clock: Pick<Clock, 'sleep'>, check: () => Promise<boolean>, ms: number): Promise<boolean> {
  return withDeadline(clock, ms, check).then(
    (outcome) => outcome.ok && outcome.value,
    () => false,
  );
}

/** Every probe at once, each failing when it throws or has not answered within `timeoutMs`; `/readyz` and the `ready` gauge share it. */
export async function runProbes(
  probes: ReadinessProbe[],
  timeoutMs: number,
  clock: Pick<Clock, 'sleep'> = systemClock,
): Promise<Record<string, boolean>> {
  const results = await Promise.all(probes.map(async (p) => [p.name, await within(clock, () => p.check(), timeoutMs)] as const));
  return Object.fromEntries(results);
}

/**
 * `/healthz` answers while the process runs; `/readyz` only when every dependency
 * (Redis, the Slack connection, the workers) is usable, so an orchestrator sends
 * no traffic to a replica that cannot act on it; `/metrics` is Prometheus' text format.
 */
export function opsRoutes(probes: ReadinessProbe[], metrics: () => Promise<string>, options: OpsRoutesOptions = {}): OpsRoute[] {
  const probeTimeoutMs = options.probeTimeoutMs ?? 2000;
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
        void runProbes(probes, probeTimeoutMs, options.clock).then((results) => {
          const failing = Object.entries(results)
            .filter(([, ok]) => !ok)
            .map(([name]) => name);
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
          (text) => res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' }).end(text),
          () => res.writeHead(500).end(),
        );
      },
    },
  ];
}
