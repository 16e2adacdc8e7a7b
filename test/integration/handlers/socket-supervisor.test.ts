import { App, LogLevel, SocketModeReceiver } from '@slack/bolt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { boltLogger } from '../../../handlers/bolt-logger.ts';
import { type SocketModeLifecycle, SocketSupervisor } from '../../../handlers/socket-supervisor.ts';
import { ConfigError } from '../../../src/config/config-error.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { type SlackEmulator, startSlackEmulator } from '../../slack-emulator/index.ts';

// The real socket-mode client (through Bolt's receiver, as the bot builds it) against the emulator.
let emu: SlackEmulator;
const stops: (() => Promise<void>)[] = [];

beforeEach(async () => {
  emu = await startSlackEmulator();
});

afterEach(async () => {
  for (const stop of stops.splice(0).reverse()) await stop();
  await emu.close();
});

const silent = createLogger({ level: 'silent', scrubber: new SecretScrubber() });

function supervised(options: { appToken?: string } = {}) {
  const receiver = new SocketModeReceiver({
    appToken: options.appToken ?? emu.appToken,
    logger: boltLogger(silent),
    logLevel: LogLevel.ERROR,
    autoReconnectEnabled: false,
    installerOptions: { clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 }, timeout: 2000 } },
  });
  const app = new App({
    token: emu.botToken,
    receiver,
    logger: boltLogger(silent),
    logLevel: LogLevel.ERROR,
    clientOptions: { slackApiUrl: emu.apiUrl },
  });
  const failures: string[] = [];
  const disconnects: string[] = [];
  const supervisor = new SocketSupervisor({
    client: receiver.client as unknown as SocketModeLifecycle,
    connect: (attempt) => (attempt === 1 ? app.start() : receiver.client.start()),
    logger: silent,
    minDelayMs: 20,
    maxDelayMs: 100,
    onConnectFailure: (error) => failures.push(error),
    onDisconnect: (reason) => disconnects.push(reason),
  });
  stops.push(async () => {
    await supervisor.stop();
    await app.stop();
  });
  return { supervisor, failures, disconnects };
}

describe('the Socket Mode supervisor with the real client', () => {
  it('keeps trying through an outage of any length and connects once Slack is back', async () => {
    const { supervisor, failures, disconnects } = supervised();
    await supervisor.start();
    const outage = emu.socketOutage({ how: 'http_503' });

    await emu.waitFor(() => outage.failedOpens >= 20, { timeoutMs: 20_000, description: 'twenty failed attempts' });
    const duringOutage = supervisor.connected();
    outage.end();
    await emu.waitForConnections(1);
    await emu.waitFor(() => supervisor.connected());

    expect(duringOutage).toBe(false);
    expect(disconnects).toEqual(['closed']);
    expect(failures.length).toBeGreaterThanOrEqual(20);
    expect(new Set(failures)).toEqual(new Set(['http_503']));
  });

  it('starts not connected when Slack is away at start, and connects later', async () => {
    const outage = emu.socketOutage({ how: 'unreachable' });
    const { supervisor, failures } = supervised();

    await supervisor.start();
    const atStart = supervisor.connected();
    outage.end();
    await emu.waitForConnections(1);

    expect(atStart).toBe(false);
    expect(failures[0]).toBe('unreachable');
  });

  it('leaves no connection behind when stopped while an attempt is still waiting for its URL', async () => {
    const { supervisor } = supervised();
    await supervisor.start();
    const held = emu.faults.hold({ methods: ['apps.connections.open'] });
    emu.disconnectAll('refresh_requested');
    await emu.waitFor(() => held.waiting === 1, { description: 'the reconnect held at apps.connections.open' });

    await supervisor.stop();
    held.release();
    await emu.waitFor(() => emu.socketFrames.filter((f) => f.data.includes('"hello"')).length === 2, {
      description: "the late attempt's hello",
    });
    await emu.waitFor(() => emu.connectionCount() === 0, { description: 'the late connection closed' });

    expect(supervisor.connected()).toBe(false);
  });

  it('refuses to start with an app token Slack does not accept, saying which setting to fix', async () => {
    const { supervisor } = supervised({ appToken: 'xapp-wrong' });

    const refused = await supervisor.start().catch((error: unknown) => error);

    expect(refused).toBeInstanceOf(ConfigError);
    expect((refused as ConfigError).message).toMatch(/SLACK_APP_TOKEN[\s\S]*invalid_auth/);
  });
});
