import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { App, LogLevel, type types } from '@slack/bolt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type JsonObject, type SlackEmulator, startSlackEmulator } from './index.ts';

// The Home tab: views.publish as Slack validates it, and app_home_opened delivered like every
// other event, over Socket Mode and over HTTP.

const ANA = 'U0ANA';
const BEN = 'W0BEN';

let emu: SlackEmulator;
let stoppers: (() => Promise<unknown>)[] = [];

beforeEach(async () => {
  emu = await startSlackEmulator({
    channels: [{ id: 'C0OPS', name: 'ops' }],
    users: [
      { id: ANA, name: 'ana' },
      { id: BEN, name: 'ben' },
    ],
  });
});

afterEach(async () => {
  for (const stop of stoppers.reverse()) await stop();
  stoppers = [];
  await emu.close();
});

function section(text: string): types.SectionBlock {
  return { type: 'section', text: { type: 'mrkdwn', text } };
}

async function publish(body: JsonObject): Promise<JsonObject> {
  const response = await fetch(`${emu.apiUrl}views.publish`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${emu.botToken}` },
    body: JSON.stringify(body),
  });
  return (await response.json()) as JsonObject;
}

/** A Bolt app that publishes a Home naming the user whenever they open it. */
function registerHome(app: App): void {
  app.event('app_home_opened', async ({ event, client }) => {
    await client.views.publish({ user_id: event.user, view: { type: 'home', blocks: [section(`Hello <@${event.user}>`)] } });
  });
}

describe('views.publish', () => {
  it('stores the Home of a user and answers with the view, its id kept across publishes', async () => {
    // Act
    const first = await publish({ user_id: ANA, view: { type: 'home', blocks: [section('one')] } });
    const second = await publish({ user_id: ANA, view: JSON.stringify({ type: 'home', blocks: [section('two')] }) });

    // Assert
    expect(first).toMatchObject({ ok: true, view: { type: 'home', blocks: [section('one')], team_id: 'T0TEST', app_id: 'A0TEST' } });
    expect((second.view as JsonObject).id).toBe((first.view as JsonObject).id);
    expect(emu.homeView(ANA)?.blocks).toEqual([section('two')]);
    expect(emu.publishedViews(ANA)).toHaveLength(2);
    expect(emu.homeView(BEN)).toBeUndefined();
  });

  it('takes 100 blocks in a Home and refuses 101, saying where', async () => {
    // Act
    const hundred = await publish({
      user_id: ANA,
      view: { type: 'home', blocks: Array.from({ length: 100 }, (_, i) => section(`row ${i}`)) },
    });
    const tooMany = await publish({
      user_id: ANA,
      view: { type: 'home', blocks: Array.from({ length: 101 }, (_, i) => section(`row ${i}`)) },
    });

    // Assert
    expect(hundred.ok).toBe(true);
    expect(tooMany).toEqual({
      ok: false,
      error: 'invalid_arguments',
      response_metadata: { messages: ['[ERROR] no more than 100 items allowed [json-pointer:/view/blocks]'] },
    });
    expect(emu.publishedViews()).toHaveLength(1);
  });

  it('refuses an unknown user, a view that is not a Home, and a stale hash', async () => {
    // Arrange
    const published = await publish({ user_id: ANA, view: { type: 'home', blocks: [] } });
    const hash = String((published.view as JsonObject).hash);
    await publish({ user_id: ANA, view: { type: 'home', blocks: [section('newer')] } });

    // Act
    const nobody = await publish({ user_id: 'U0NOBODY', view: { type: 'home', blocks: [] } });
    const modal = await publish({ user_id: ANA, view: { type: 'modal', blocks: [] } });
    const stale = await publish({ user_id: ANA, hash, view: { type: 'home', blocks: [section('older')] } });

    // Assert
    expect(nobody).toMatchObject({ ok: false, error: 'invalid_arguments', response_metadata: { messages: ['[ERROR] invalid `user_id`'] } });
    expect(modal).toMatchObject({ ok: false, error: 'invalid_arguments' });
    expect(stale).toEqual({ ok: false, error: 'hash_conflict' });
    expect(emu.homeView(ANA)?.blocks).toEqual([section('newer')]);
  });

  it('answers not_enabled when the app has no Home tab', async () => {
    // Arrange
    await emu.close();
    emu = await startSlackEmulator({ users: [{ id: ANA, name: 'ana' }], homeTabEnabled: false });

    // Act
    const answer = await publish({ user_id: ANA, view: { type: 'home', blocks: [] } });

    // Assert
    expect(answer).toEqual({ ok: false, error: 'not_enabled' });
  });
});

describe('app_home_opened', () => {
  it('reaches a Bolt app over Socket Mode, which publishes the Home', async () => {
    // Arrange
    const app = new App({
      token: emu.botToken,
      appToken: emu.appToken,
      socketMode: true,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
    });
    stoppers.push(() => app.stop());
    registerHome(app);
    await app.start();

    // Act
    const delivered = await emu.openHome(BEN);
    const view = await emu.waitFor(() => emu.homeView(BEN), { description: "ben's Home" });

    // Assert
    expect(delivered.timedOut).toBe(false);
    expect(view.blocks).toEqual([section(`Hello <@${BEN}>`)]);
    const frame = emu.socketFrames.find((f) => f.direction === 'out' && f.data.includes('app_home_opened'));
    expect(JSON.parse(frame!.data)).toMatchObject({
      type: 'events_api',
      payload: { type: 'event_callback', event: { type: 'app_home_opened', user: BEN, channel: 'D0BEN', tab: 'home' } },
    });
  });

  it('carries the Home last published for the user, as Slack does', async () => {
    // Arrange
    const app = new App({
      token: emu.botToken,
      appToken: emu.appToken,
      socketMode: true,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
    });
    stoppers.push(() => app.stop());
    const seen: unknown[] = [];
    app.event('app_home_opened', async ({ event }) => {
      seen.push(event.view?.blocks);
    });
    await app.start();
    await publish({ user_id: ANA, view: { type: 'home', blocks: [section('before')] } });

    // Act
    await emu.openHome(ANA);

    // Assert
    await emu.waitFor(() => seen.length === 1, { description: 'the event' });
    expect(seen).toEqual([[section('before')]]);
  });

  it('reaches a Bolt app in HTTP mode, signed, and is acked', async () => {
    // Arrange
    const app = new App({
      token: emu.botToken,
      signingSecret: emu.signingSecret,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
    });
    registerHome(app);
    const server = (await app.start(0)) as Server;
    stoppers.push(() => app.stop());
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/slack/events`;

    // Act
    const delivered = await emu.openHomeHttp(url, ANA);
    const forged = await emu.openHomeHttp(url, BEN, { forgeSignature: true });

    // Assert
    expect(delivered.status).toBe(200);
    const view = await emu.waitFor(() => emu.homeView(ANA), { description: "ana's Home" });
    expect(view.blocks).toEqual([section(`Hello <@${ANA}>`)]);
    expect(emu.acks.filter((a) => a.type === 'events_api' && a.transport === 'http')).toHaveLength(1);
    expect(forged.status).toBe(401);
    expect(emu.homeView(BEN)).toBeUndefined();
  });

  it('is not sent to an app whose manifest does not subscribe to it', async () => {
    // Arrange
    await emu.close();
    emu = await startSlackEmulator({ users: [{ id: ANA, name: 'ana' }], botEvents: [] });

    // Act and assert
    expect(() => emu.openHome(ANA)).toThrow(/does not subscribe to app_home_opened/);
  });
});
