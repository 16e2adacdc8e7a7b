import { App, LogLevel, type types } from '@slack/bolt';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type JsonObject, type SlackEmulator, startSlackEmulator } from './index.ts';

// Modals as strict as Slack: views.open spends a fresh trigger of the user's interaction, views.update
// replaces an open modal, and the user side submits (view_submission), clicks inside, and closes.

const ANA = 'U0ANA';
const BEN = 'U0BEN';

let emu: SlackEmulator;
let app: App | undefined;
/** What the Bolt app saw, in order. */
let seen: JsonObject[];

beforeEach(async () => {
  emu = await startSlackEmulator({
    channels: [{ id: 'C0OPS', name: 'ops' }],
    users: [
      { id: ANA, name: 'ana' },
      { id: BEN, name: 'ben' },
    ],
    triggerTtlMs: 3000,
  });
  seen = [];
});

afterEach(async () => {
  await app?.stop();
  app = undefined;
  await emu.close();
});

const REVIEW: types.InputBlock = {
  type: 'input',
  block_id: 'review',
  label: { type: 'plain_text', text: 'Reviewed' },
  element: {
    type: 'checkboxes',
    action_id: 'items',
    options: [
      { text: { type: 'plain_text', text: 'Release notes read' }, value: 'notes' },
      { text: { type: 'plain_text', text: 'Backups fresh' }, value: 'backups' },
    ],
  },
};

const VERSION: types.InputBlock = {
  type: 'input',
  block_id: 'version',
  label: { type: 'plain_text', text: 'Version' },
  element: {
    type: 'static_select',
    action_id: 'pick',
    placeholder: { type: 'plain_text', text: 'Choose a version' },
    options: [
      { text: { type: 'plain_text', text: 'v1.13.9' }, value: 'v1.13.9' },
      { text: { type: 'plain_text', text: 'v1.13.8' }, value: 'v1.13.8' },
    ],
  },
};

const REASON: types.InputBlock = {
  type: 'input',
  block_id: 'reason',
  optional: true,
  label: { type: 'plain_text', text: 'Reason' },
  element: { type: 'plain_text_input', action_id: 'text' },
};

function modal(extra: Partial<types.ModalView> = {}): types.ModalView {
  return {
    type: 'modal',
    callback_id: 'upgrade',
    private_metadata: '{"cluster":"staging"}',
    title: { type: 'plain_text', text: 'Upgrade Talos' },
    submit: { type: 'plain_text', text: 'Plan' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: 'Pick a version' } },
      VERSION,
      REVIEW,
      REASON,
      { type: 'actions', elements: [{ type: 'button', action_id: 'refresh', text: { type: 'plain_text', text: 'Refresh' }, value: 'r' }] },
    ],
    ...extra,
  };
}

/** A Bolt app over Socket Mode; `/talos` opens `view` (or what `viewFor` returns) and records the answer. */
async function startApp(
  opts: { onSubmit?: (view: JsonObject) => JsonObject | undefined; view?: types.ModalView } = {},
): Promise<JsonObject[]> {
  const answers: JsonObject[] = [];
  app = new App({
    token: emu.botToken,
    appToken: emu.appToken,
    socketMode: true,
    logLevel: LogLevel.ERROR,
    clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
  });
  app.command('/talos', async ({ ack, body, client }) => {
    await ack();
    try {
      answers.push((await client.views.open({ trigger_id: body.trigger_id, view: opts.view ?? modal() })) as unknown as JsonObject);
    } catch (error) {
      answers.push({ error: (error as { data?: { error?: string } }).data?.error, data: (error as { data?: unknown }).data });
    }
  });
  app.view({ callback_id: 'upgrade', type: 'view_submission' }, async ({ ack, body, view }) => {
    seen.push(body as unknown as JsonObject);
    const answer = opts.onSubmit?.(view as unknown as JsonObject);
    await ack(answer as never);
  });
  app.view({ callback_id: 'upgrade', type: 'view_closed' }, async ({ ack, body }) => {
    seen.push(body as unknown as JsonObject);
    await ack();
  });
  app.command('/other', async ({ ack }) => {
    await ack();
  });
  app.action('refresh', async ({ ack, body }) => {
    seen.push(body as unknown as JsonObject);
    await ack();
  });
  await app.start();
  return answers;
}

async function openFor(user: string, answers: JsonObject[]): Promise<string> {
  const before = answers.length;
  await emu.sendSlashCommand({ user, channel: 'C0OPS', text: 'upgrade talos' });
  const answer = await emu.waitFor(() => answers[before], { description: 'the views.open answer' });
  expect(answer.ok).toBe(true);
  return String((answer.view as JsonObject).id);
}

async function api(method: string, body: JsonObject): Promise<JsonObject> {
  const response = await fetch(`${emu.apiUrl}${method}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${emu.botToken}` },
    body: JSON.stringify(body),
  });
  return (await response.json()) as JsonObject;
}

describe('views.open', () => {
  it('opens a modal for the user of the slash command, with ids and the initial state, and records it', async () => {
    // Arrange
    const answers = await startApp();

    // Act
    const viewId = await openFor(ANA, answers);

    // Assert
    const [opened] = emu.modals(ANA);
    expect(opened).toMatchObject({ viewId, user: ANA, open: true });
    expect(opened!.view).toMatchObject({
      type: 'modal',
      callback_id: 'upgrade',
      private_metadata: '{"cluster":"staging"}',
      state: {
        values: {
          version: { pick: { type: 'static_select', selected_option: null } },
          review: { items: { type: 'checkboxes', selected_options: [] } },
          reason: { text: { type: 'plain_text_input', value: null } },
        },
      },
    });
    expect(emu.modals(BEN)).toEqual([]);
    expect(emu.renderModal(viewId).split('\n')).toEqual([
      '┌─ modal: Upgrade Talos ─┐',
      '│ Pick a version',
      '│ Version: [Choose a version ▾]',
      '│ Reviewed:',
      '│   ☐ Release notes read',
      '│   ☐ Backups fresh',
      '│ Reason (optional): [___]',
      '│ [Refresh]',
      '└─ [Cancel] [Plan]',
    ]);
  });

  it('spends a trigger once: a second open answers exchanged_trigger_id, an unknown one invalid_trigger_id', async () => {
    // Arrange
    await startApp();
    await emu.sendSlashCommand({ user: ANA, channel: 'C0OPS', text: 'upgrade talos' });
    await emu.waitFor(() => emu.modals(ANA).length === 1, { description: 'the modal' });
    const trigger = String(emu.callsTo('views.open')[0]!.args.trigger_id);

    // Act
    const again = await api('views.open', { trigger_id: trigger, view: modal() });
    const unknown = await api('views.open', { trigger_id: '1.2.abc', view: modal() });
    const missing = await api('views.open', { view: modal() });

    // Assert
    expect(again).toEqual({ ok: false, error: 'exchanged_trigger_id' });
    expect(unknown).toEqual({ ok: false, error: 'invalid_trigger_id' });
    expect(missing).toMatchObject({ ok: false, error: 'invalid_arguments' });
    expect(emu.modals()).toHaveLength(1);
  });

  it('refuses a trigger older than its deadline with expired_trigger_id', async () => {
    // Arrange
    await emu.close();
    emu = await startSlackEmulator({ users: [{ id: ANA, name: 'ana' }], triggerTtlMs: 20 });
    const clicks: string[] = [];
    app = new App({
      token: emu.botToken,
      appToken: emu.appToken,
      socketMode: true,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } },
    });
    app.command('/talos', async ({ ack, body }) => {
      clicks.push(body.trigger_id);
      await ack();
    });
    await app.start();
    await emu.sendSlashCommand({ user: ANA, channel: 'C0OPS', text: 'upgrade' });
    await new Promise((resolve) => setTimeout(resolve, 60));

    // Act
    const late = await api('views.open', { trigger_id: clicks[0], view: modal() });

    // Assert
    expect(late).toEqual({ ok: false, error: 'expired_trigger_id' });
    expect(emu.modals()).toEqual([]);
  });

  it('checks the view as Slack does, saying where, and leaves the trigger unspent', async () => {
    // Arrange
    await startApp();
    // One trigger for every attempt: a refused view does not spend it.
    const fresh = await freshTrigger(ANA);
    const bad = (view: JsonObject): Promise<JsonObject> => api('views.open', { trigger_id: fresh, view });

    // Act
    const longTitle = await bad({ ...modal(), title: { type: 'plain_text', text: 'An upgrade title too long' } });
    const noSubmit = await bad({ ...modal(), submit: undefined });
    const mrkdwnTitle = await bad({ ...modal(), title: { type: 'mrkdwn', text: 'Upgrade' } });
    const bigMetadata = await bad({ ...modal(), private_metadata: 'x'.repeat(3001) });
    const longCallback = await bad({ ...modal(), callback_id: 'c'.repeat(256) });
    const tooManyBlocks = await bad({
      ...modal({ submit: undefined }),
      blocks: Array.from({ length: 101 }, () => ({ type: 'divider' })),
    });
    const badInitial = await bad({ ...modal(), blocks: [{ ...VERSION, element: { ...VERSION.element, initial_option: opt('v9') } }] });
    const elevenBoxes = await bad({
      ...modal(),
      blocks: [{ ...REVIEW, element: { type: 'checkboxes', options: Array.from({ length: 11 }, (_, i) => opt(`o${i}`)) } }],
    });
    const noLabel = await bad({ ...modal(), blocks: [{ type: 'input', element: { type: 'plain_text_input' } }] });
    const buttonInput = await bad({
      ...modal(),
      blocks: [{ ...REVIEW, element: { type: 'button', text: { type: 'plain_text', text: 'x' } } }],
    });
    const good = await bad(modal() as unknown as JsonObject);

    // Assert
    const messages = (answer: JsonObject): unknown => (answer.response_metadata as { messages: string[] } | undefined)?.messages;
    expect(messages(longTitle)).toEqual(['[ERROR] must be less than 25 characters [json-pointer:/view/title/text]']);
    expect(messages(noSubmit)).toEqual(['[ERROR] must provide submit when the view has input blocks [json-pointer:/view/submit]']);
    expect(messages(mrkdwnTitle)).toEqual(['[ERROR] must be a plain_text text object [json-pointer:/view/title]']);
    expect(messages(bigMetadata)).toEqual(['[ERROR] must be less than 3001 characters [json-pointer:/view/private_metadata]']);
    expect(messages(longCallback)).toEqual(['[ERROR] must be less than 256 characters [json-pointer:/view/callback_id]']);
    expect(messages(tooManyBlocks)).toEqual(['[ERROR] no more than 100 items allowed [json-pointer:/view/blocks]']);
    expect(messages(badInitial)).toEqual([
      '[ERROR] must match one of the provided options [json-pointer:/view/blocks/0/element/initial_option]',
    ]);
    expect(messages(elevenBoxes)).toEqual(['[ERROR] no more than 10 items allowed [json-pointer:/view/blocks/0/element/options]']);
    expect(messages(noLabel)).toEqual(['[ERROR] must be a text object [json-pointer:/view/blocks/0/label]']);
    expect(messages(buttonInput)).toEqual(['[ERROR] unsupported type: button [json-pointer:/view/blocks/0/element/type]']);
    expect(good.ok).toBe(true);
    expect(emu.modals(ANA)).toHaveLength(1);
  });
});

function opt(value: string): JsonObject {
  return { text: { type: 'plain_text', text: value }, value };
}

/** A trigger of a new interaction of `user`: a slash command the app acks without opening anything. */
async function freshTrigger(user: string): Promise<string> {
  const before = emu.socketFrames.length;
  await emu.sendSlashCommand({ user, channel: 'C0OPS', text: 'noop', command: '/other' });
  const frame = emu.socketFrames.slice(before).find((f) => f.direction === 'out' && f.data.includes('/other'));
  return String((JSON.parse(frame!.data) as { payload: { trigger_id: string } }).payload.trigger_id);
}

describe('views.update', () => {
  it('replaces an open modal by view_id, keeping what the user entered, and refuses a stale hash', async () => {
    // Arrange
    const answers = await startApp({ onSubmit: () => ({ response_action: 'errors', errors: { review: 'Tick every item' } }) });
    const viewId = await openFor(ANA, answers);
    const hash = String(emu.modals(ANA)[0]!.view.hash);
    await emu.submitView(ANA, viewId, { version: 'v1.13.8', review: ['notes'] });

    // Act
    const updated = await api('views.update', {
      view_id: viewId,
      hash,
      view: modal({ title: { type: 'plain_text', text: 'Upgrade Talos (2)' } }),
    });
    const stale = await api('views.update', { view_id: viewId, hash, view: modal() });
    const unknown = await api('views.update', { view_id: 'VNOPE', view: modal() });

    // Assert
    expect(updated).toMatchObject({ ok: true, view: { id: viewId, title: { text: 'Upgrade Talos (2)' } } });
    expect(stale).toEqual({ ok: false, error: 'hash_conflict' });
    expect(unknown).toEqual({ ok: false, error: 'not_found' });
    const [record] = emu.modals(ANA);
    expect(record!.versions).toHaveLength(2);
    expect(record!.view.state).toMatchObject({
      values: { version: { pick: { selected_option: opt('v1.13.8') } }, review: { items: { selected_options: [{ value: 'notes' }] } } },
    });
  });
});

describe('view_submission', () => {
  it('delivers the state by block and action id; errors keep the modal open, an empty ack closes it', async () => {
    // Arrange
    const answers = await startApp({
      onSubmit: (view) => {
        const values = (view.state as { values: Record<string, Record<string, JsonObject>> }).values;
        const ticked = (values.review!.items!.selected_options as unknown[]).length;
        return ticked === 2 ? undefined : { response_action: 'errors', errors: { review: 'Tick every item before planning' } };
      },
    });
    const viewId = await openFor(ANA, answers);

    // Act
    const first = await emu.submitView(ANA, viewId, { version: 'v1.13.9', review: ['notes'], reason: 'patch' });
    const shown = emu.renderModal(viewId);
    const second = await emu.submitView(ANA, viewId, { review: ['notes', 'backups'] });

    // Assert
    expect(first).toMatchObject({ outcome: 'errors', errors: { review: 'Tick every item before planning' } });
    expect(shown).toContain('│   ⚠ Tick every item before planning');
    expect(shown).toContain('│   ☑ Release notes read');
    expect(second.outcome).toBe('closed');
    expect(seen).toHaveLength(2);
    expect(seen[1]).toMatchObject({
      type: 'view_submission',
      user: { id: ANA },
      view: {
        id: viewId,
        callback_id: 'upgrade',
        private_metadata: '{"cluster":"staging"}',
        state: {
          values: {
            version: { pick: { type: 'static_select', selected_option: opt('v1.13.9') } },
            review: { items: { type: 'checkboxes', selected_options: [{ value: 'notes' }, { value: 'backups' }] } },
            reason: { text: { type: 'plain_text_input', value: 'patch' } },
          },
        },
      },
    });
    expect(emu.modals(ANA)[0]).toMatchObject({ open: false, ended: 'submitted', errors: [{ review: 'Tick every item before planning' }] });
    await expect(emu.submitView(ANA, viewId, {})).rejects.toThrow(/no open modal/);
  });

  it('sends nothing while a required input is empty, as the client refuses', async () => {
    // Arrange
    const answers = await startApp();
    const viewId = await openFor(ANA, answers);

    // Act
    const result = await emu.submitView(ANA, viewId, { review: ['notes'] });

    // Assert
    expect(result).toEqual({ outcome: 'missing_required', errors: { version: 'Please complete this required field.' } });
    expect(seen).toEqual([]);
    expect(emu.modals(ANA)[0]!.open).toBe(true);
  });

  it('lets a test send a forged state or metadata, and refuses options the modal does not offer or another user', async () => {
    // Arrange
    const answers = await startApp();
    const viewId = await openFor(ANA, answers);

    // Act
    await emu.submitView(ANA, viewId, { version: 'v1.13.9', review: ['notes'] }, { privateMetadata: '{"cluster":"production"}' });

    // Assert
    expect(seen[0]).toMatchObject({ view: { private_metadata: '{"cluster":"production"}' } });
    const other = await openFor(ANA, answers);
    await expect(emu.submitView(ANA, other, { version: 'v2.0.0' })).rejects.toThrow(/offers no option v2.0.0/);
    await expect(emu.submitView(BEN, other, {})).rejects.toThrow(/open for U0ANA/);
  });
});

describe('inside a modal', () => {
  it('a button click delivers block_actions with the view as container', async () => {
    // Arrange
    const answers = await startApp();
    const viewId = await openFor(ANA, answers);

    // Act
    const delivered = await emu.clickInView({ user: ANA, viewId, actionId: 'refresh' });

    // Assert
    expect(delivered.timedOut).toBe(false);
    expect(seen[0]).toMatchObject({
      type: 'block_actions',
      container: { type: 'view', view_id: viewId },
      view: { id: viewId, callback_id: 'upgrade' },
      actions: [{ type: 'button', action_id: 'refresh', value: 'r' }],
    });
    expect(seen[0]!.trigger_id).toEqual(expect.any(String));
  });

  it('closing tells the bot only when the view asked, and ends the modal either way', async () => {
    // Arrange
    const answers = await startApp({ view: modal({ notify_on_close: true }) });
    const viewId = await openFor(ANA, answers);

    // Act
    await emu.closeView(ANA, viewId);

    // Assert
    await emu.waitFor(() => seen.length === 1, { description: 'view_closed' });
    expect(seen[0]).toMatchObject({ type: 'view_closed', view: { id: viewId } });
    expect(emu.modals(ANA)[0]).toMatchObject({ open: false, ended: 'closed' });
  });
});
