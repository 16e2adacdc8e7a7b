import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, commandReply, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { readStringLines } from './corpus.ts';
import { stateReader, type BotState, type StateReader } from './state.ts';

/** The hostile texts of the corpus, plus long ones that would bloat it. */
const HOSTILE = [
  ...readStringLines('commands.txt'),
  `health ${'a'.repeat(10_000)}`,
  `upgrade talos v${'1.'.repeat(2_000)}1`,
  `rollback ${'$(id)'.repeat(20_000)}`,
  `upgrade talos v1.12.11${' '.repeat(170)};id`,
];

/** What a refusal says the operator should do instead: an example, the usage, the help, or who and where. */
const GUIDANCE =
  /e\.g\.|Usage: `|Try `\/talos help`|see `\/talos help`|[Ss]ee `\/talos status`|Known (clusters|addresses): |Its nodes: |like \d+\.\d+\.\d+ or v\d|Give the node's|`\/talos upgrade talos <version>|maintenance channel <#C|Use a maintenance channel: |have yourself added|\*`\/talos` commands\*/;
/** Control, format (zero-width, bidi), surrogate, private-use and unassigned characters: a reply holding one cannot be read as written. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}]/u;
/** Replies of commands that were taken. */
const ACCEPTED =
  /is running \(`op-|^Running the health gate|^Checking \*|^Taking an etcd snapshot|^Posting the maintenance record|^Running `tofu fmt`|^Cancelled (`op-|<https:)/;

/** A command typed without its version or node: for one of its operators in a cluster's channel, a modal asks for what is missing. */
const GUIDED = /^\s*(upgrade\s+(talos|k8s|kubernetes)|rollback|remove)\s*$/i;

let h: Harness;
let state: StateReader;

beforeAll(async () => {
  h = await startHarness();
  state = stateReader(h.redis.url);
});

afterAll(async () => {
  await state?.close();
  await h?.stop();
});

interface Observed {
  state: BotState;
  calls: number;
  posts: number;
  channelMessages: number;
}

async function observe(): Promise<Observed> {
  const channels = Object.values(CHANNELS);
  return {
    state: await state.read(),
    calls: h.sim.calls.length,
    posts: h.slack.callsTo('chat.postMessage').length + h.slack.callsTo('chat.update').length,
    channelMessages: channels.reduce((n, c) => n + h.slack.channelMessages(c).length, 0),
  };
}

/** What the user sees for `/talos <text>`: the reply, or a modal the bot opened to ask for what is missing. */
async function answer(text: string, user: string, channel: string): Promise<{ reply: string } | { modal: true }> {
  const modals = h.slack.callsTo('views.open').length;
  const replies = h.slack.responseUrlCalls.length;
  const acked = await h.slack.sendSlashCommand({ user, channel, text });
  if (acked.timedOut) throw new Error(`/talos ${text.slice(0, 80)} was not acknowledged (${acked.reason})`);
  if (typeof acked.payload.text !== 'string' || acked.payload.text === '') {
    const opened = await h.slack.waitFor(
      () => (h.slack.callsTo('views.open').length > modals ? 'modal' : h.slack.responseUrlCalls.length > replies ? 'reply' : undefined),
      { timeoutMs: 30_000, description: `a reply or a modal for /talos ${text.slice(0, 80)}` },
    );
    if (opened === 'modal') return { modal: true };
  }
  return { reply: await commandReply(h.slack, acked, { description: `/talos ${text.slice(0, 80)}` }) };
}

/**
 * Sends every hostile text as `user` in `channel`; returns the texts whose answer was not a refusal with guidance,
 * nor, for a command typed without its version or node, the modal that asks for it.
 */
async function unclearRefusals(user: string, channel: string): Promise<{ unclear: { text: string; reply: string }[]; modals: string[] }> {
  const unclear: { text: string; reply: string }[] = [];
  const modals: string[] = [];
  for (const text of HOSTILE) {
    const answered = await answer(text, user, channel);
    if ('modal' in answered) {
      modals.push(text);
      if (!GUIDED.test(text)) unclear.push({ text: text.slice(0, 80), reply: '(a modal)' });
      continue;
    }
    const { reply } = answered;
    if (reply === '' || ACCEPTED.test(reply) || !GUIDANCE.test(reply) || INVISIBLE.test(reply.replaceAll('\n', '')))
      unclear.push({ text: text.slice(0, 80), reply: reply.slice(0, 200) });
  }
  return { unclear, modals };
}

describe('the hostile command corpus, end to end through the bot', () => {
  it('has a corpus worth running', () => {
    expect(HOSTILE.length).toBeGreaterThan(100);
    expect(HOSTILE.filter((t) => GUIDED.test(t)).length).toBeGreaterThan(0);
  });

  it.each([
    ["an operator in the cluster's own channel", USERS.alice, CHANNELS.production, HOSTILE.filter((t) => GUIDED.test(t))],
    ['a user of no list in a channel of no cluster', USERS.eve, CHANNELS.random, []],
  ])('refuses every text from %s, saying what to do, and changes nothing', async (_, user, channel, guided) => {
    // Arrange
    const before = await observe();

    // Act
    const { unclear, modals } = await unclearRefusals(user, channel);

    // Assert: a command without its version or node asks for it in a modal, and only its operator is asked.
    expect(unclear).toEqual([]);
    expect(modals).toEqual(guided);
    // A job enqueued by mistake would run after its ack: look once the bot has nothing left to do.
    await waitForSettled(h);
    const after = await observe();
    expect(after).toEqual(before);
    expect(h.bot.running()).toBe(true);
    expect(await h.command('status', { channel: CHANNELS.random })).toMatch(
      /^\*staging\* \(<#C0MAINTSTG>\) — no operation holds it\n\*production\* \(<#C0MAINTPRD>\) — no operation holds it\n/,
    );
  });

  it('lets no hostile text reach a talosctl or tofu command line', async () => {
    // Arrange: a real command afterwards, so the command lines hold something to search.
    const since = h.sim.calls.length;
    const reply = await h.command('health');
    expect(reply).toContain('Running the health gate on *production*');
    await h.slack.waitFor(
      () =>
        h.sim.calls.length > since + 3 &&
        h.slack.channelMessages(CHANNELS.production).some((m) => /Health gate (passed|failed)/.test(m.text)),
      {
        timeoutMs: 30_000,
        description: 'the health gate of the real command',
      },
    );

    // Act
    const argv = h.sim.calls.flatMap((c) => c.argv);
    const tokens = HOSTILE.flatMap((t) => t.split(/\s+/));
    // Text a path or an address never holds, and flags the bot itself never passes.
    const foreign = tokens.filter((t) => t.length >= 3 && !/^[A-Za-z0-9._:/-]+$/.test(t));
    const ownFlags = new Set(argv.filter((a) => a.startsWith('-')));
    const flags = tokens.filter((t) => t.startsWith('-') && !ownFlags.has(t));
    const leaked = argv.filter(
      (arg) =>
        HOSTILE.some((t) => t.trim().length > 3 && arg.includes(t.trim())) || foreign.some((t) => arg.includes(t)) || flags.includes(arg),
    );

    // Assert
    expect(argv.length).toBeGreaterThan(0);
    expect(leaked).toEqual([]);
    expect(h.bot.running()).toBe(true);
  });
});
