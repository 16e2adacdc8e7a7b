/**
 * `npm run demo -- --web`: the simulated estate's channels as a page on 127.0.0.1. The same
 * private redis-server, simulated clusters, Slack emulator and real bot as the printed demo; the
 * person at the browser types the commands and clicks the buttons, as the operator or the approver.
 */
import { productionShape, stagingShape } from '../../sim/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../../support/harness.ts';
import { startWebServer, type DemoUser, type WebServer } from './web-server.ts';

/** Who the page can act as, and what the demo's inventory lets each do. */
export const DEMO_USERS: DemoUser[] = [
  { id: USERS.alice, name: 'alice', role: 'operator' },
  { id: USERS.carol, name: 'carol', role: 'approver' },
  { id: USERS.dave, name: 'dave', role: 'approver, @S0SRE' },
  { id: USERS.bob, name: 'bob', role: 'operator' },
  { id: USERS.eve, name: 'eve', role: 'neither' },
];

export interface WebDemo {
  url: string;
  harness: Harness;
  server: WebServer;
  stop(): Promise<void>;
}

/**
 * Starts the estate, the bot and the page. `port` 0 takes a free one.
 * Reboots take `rebootMs` (default 2000 ms), long enough to watch a node go down and come back.
 */
export async function startWebDemo(options: { port?: number; rebootMs?: number } = {}): Promise<WebDemo> {
  // The printed demo's estate: production runs a CloudNativePG database, as its readiness gates expect.
  const clusters = [
    stagingShape(),
    productionShape({ cnpg: [{ name: 'db', namespace: 'apps', instances: 3, podAntiAffinityType: 'required' }] }),
  ];
  const harness = await startHarness({ timing: { rebootMs: options.rebootMs ?? 2000 }, clusters, inventory: { withoutNodeLists: true } });
  try {
    const server = await startWebServer({
      slack: harness.slack,
      sim: harness.sim,
      users: DEMO_USERS,
      channels: [
        { id: CHANNELS.production, name: 'maint-production' },
        { id: CHANNELS.staging, name: 'maint-staging' },
        { id: CHANNELS.random, name: 'random' },
      ],
      port: options.port,
    });
    return {
      url: server.url,
      harness,
      server,
      async stop() {
        await server.close();
        await harness.stop();
      },
    };
  } catch (error) {
    await harness.stop();
    throw error;
  }
}

/** The port from `DEMO_WEB_PORT`, else a free one; a value that is no port stops the demo before anything starts. */
export function webDemoPort(env: NodeJS.ProcessEnv): number {
  const raw = env.DEMO_WEB_PORT;
  if (raw === undefined || raw === '') return 0;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65_535)
    throw new Error(`DEMO_WEB_PORT must be a port number (0-65535, 0 takes a free one), not ${JSON.stringify(raw)}`);
  return port;
}

/** Runs until Ctrl-C, then stops the bot, the emulator, the simulator and Redis. */
export async function runWebDemo(): Promise<void> {
  const port = webDemoPort(process.env);
  process.stdout.write('Starting redis-server, the simulated staging and production clusters, the Slack emulator and the bot…\n');
  const demo = await startWebDemo({ port });
  process.stdout.write(
    [
      '',
      `  Open ${demo.url}`,
      '',
      '  Act as @alice (operator) to type /talos commands, as @carol or @dave (approvers) to approve.',
      '  Try: /talos help · /talos health · /talos upgrade talos v1.12.11 in #maint-production.',
      '  "Break the cluster" sets a fault of the simulator (a node that does not come back, a blocking',
      '  disruption budget) to rehearse a stop. Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  process.stdout.write('Stopping…\n');
  await demo.stop();
}
