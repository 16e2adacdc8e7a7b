import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, USERS, type Harness } from './harness.ts';

export interface Plan {
  opId: string;
  root: Message;
  ack: string;
}

export function opIdOf(text: string): string {
  const id = /\b(op-[a-z0-9]+)\b/.exec(text)?.[1];
  if (!id) throw new Error(`no operation id in ${text}`);
  return id;
}

/** How every message that names the operation links to its thread: Slack's permalink of its root message. */
export function opLink(plan: Plan, channel: string = CHANNELS.production): string {
  return `<https://talos-test.slack.com/archives/${channel}/p${plan.root.ts.replace('.', '')}|${plan.opId}>`;
}

function hasButton(message: Message | undefined, actionId: string): boolean {
  return JSON.stringify(message?.blocks ?? []).includes(`"action_id":"${actionId}"`);
}

/** Sends the upgrade command and waits for its root message: the plan (with Start) or the refusal. */
export async function requestUpgrade(h: Harness, text: string, options: { user?: string; channel?: string } = {}): Promise<Plan> {
  const channel = options.channel ?? CHANNELS.production;
  const ack = await h.command(text, { user: options.user ?? USERS.alice, channel });
  const opId = opIdOf(ack);
  const root = await h.slack.waitFor(
    () => h.slack.channelMessages(channel).find((m) => m.text.includes(opId) && /planned|refused/.test(m.text)),
    { timeoutMs: 30_000, description: `the plan of ${opId}` },
  );
  return { opId, root, ack };
}

/**
 * Clicks Start. A production plan without a staging rehearsal in the records first needs an
 * approver's Override; `override` (default true) clicks it as an approver before starting.
 */
export async function clickStart(
  h: Harness,
  plan: Plan,
  user: string = USERS.alice,
  channel: string = CHANNELS.production,
  options: { override?: boolean; overrideBy?: string; overrideThen?: string } = {},
) {
  const root = h.slack.message(channel, plan.root.ts);
  if (options.override !== false && hasButton(root, 'talos-op-override'))
    // Four eyes: the approvers who override are never the one who requested the operation.
    await overrideTwice(h, plan, channel, options.overrideBy, options.overrideThen);
  return h.slack.clickButton({ user, channel, messageTs: plan.root.ts, actionId: 'talos-op-start' });
}

/** A missing staging rehearsal overridden by two approvers, `first` (default carol) then `second` (default the other of carol and dave), as the runbook asks. */
export async function overrideTwice(
  h: Harness,
  plan: Plan,
  channel: string = CHANNELS.production,
  first: string = USERS.carol,
  second: string = first === USERS.dave ? USERS.carol : USERS.dave,
) {
  await h.slack.clickButton({ user: first, channel, messageTs: plan.root.ts, actionId: 'talos-op-override' });
  await h.slack.waitFor(() => /overridden by/.test(JSON.stringify(h.slack.message(channel, plan.root.ts)?.blocks ?? [])), {
    description: 'the first override',
  });
  await h.slack.clickButton({ user: second, channel, messageTs: plan.root.ts, actionId: 'talos-op-override' });
  await h.slack.waitFor(() => JSON.stringify(h.slack.message(channel, plan.root.ts)?.blocks ?? []).includes(`and <@${second}>`), {
    description: 'the second override',
  });
}

/** The newest approval request in the thread that still has its buttons. */
export async function waitForApprovalRequest(
  h: Harness,
  plan: Plan,
  channel: string = CHANNELS.production,
  timeoutMs = 30_000,
): Promise<Message> {
  return h.slack.waitFor(
    () =>
      h.slack
        .thread(channel, plan.root.ts)
        .filter((m) => hasButton(h.slack.message(channel, m.ts), 'talos-step-approve'))
        .at(-1),
    { timeoutMs, description: 'an approval request' },
  );
}

/** The approval request whose text matches `pattern`, once it is in the thread with its buttons. */
export async function waitForApprovalMatching(
  h: Harness,
  plan: Plan,
  pattern: RegExp,
  channel: string = CHANNELS.production,
  timeoutMs = 90_000,
): Promise<Message> {
  return h.slack.waitFor(
    () =>
      h.slack
        .thread(channel, plan.root.ts)
        .find((m) => pattern.test(m.text) && hasButton(h.slack.message(channel, m.ts), 'talos-step-approve')),
    { timeoutMs, description: `an approval request matching ${pattern}` },
  );
}

/** The value of a button as first posted, so a click on an already-edited message replays it (a stale client). */
export function originalButtonValue(h: Harness, channel: string, ts: string, actionId: string): string | undefined {
  const blocks = (h.slack.versions(channel, ts)[0]?.blocks ?? []) as { elements?: { action_id?: string; value?: string }[] }[];
  return blocks.flatMap((b) => b.elements ?? []).find((e) => e.action_id === actionId)?.value;
}

export async function approve(
  h: Harness,
  request: Message,
  user: string = USERS.carol,
  channel: string = CHANNELS.production,
  actionId = 'talos-step-approve',
) {
  return h.slack.clickButton({
    user,
    channel,
    messageTs: request.ts,
    actionId,
    value: originalButtonValue(h, channel, request.ts, actionId),
    // An approver who checked what the request asks ticks it (a replacement's boot ISO); a request without checkboxes has none.
    ticks: tickAll(h, channel, request.ts),
  });
}

/** Waits until the root message shows one of the final or waiting states. */
export async function waitForRootState(
  h: Harness,
  plan: Plan,
  pattern: RegExp,
  channel: string = CHANNELS.production,
  timeoutMs = 60_000,
): Promise<Message> {
  return h.slack.waitFor(
    () => {
      const m = h.slack.message(channel, plan.root.ts);
      return m && pattern.test(m.text) ? m : undefined;
    },
    { timeoutMs, description: `root message matching ${pattern}` },
  );
}

/** The audit entries in the operation's thread, one per line (a reply carries the entries since the previous one). */
export function auditLines(h: Harness, plan: Plan, channel: string = CHANNELS.production): string[] {
  return h.slack
    .thread(channel, plan.root.ts)
    .flatMap((m) => m.text.split('\n'))
    .filter((l) => /^#\d+ /.test(l));
}

/** Approves every control-plane request as it comes, until the operation ends. */
export async function approveUntilDone(
  h: Harness,
  plan: Plan,
  channel: string = CHANNELS.production,
  approver: string = USERS.carol,
): Promise<Message> {
  const seen = new Set<string>();
  for (;;) {
    const outcome = await h.slack.waitFor(
      () => {
        const root = h.slack.message(channel, plan.root.ts);
        if (root && /completed|stopped at the first failure|cancelled/.test(root.text)) return { done: root };
        const request = h.slack
          .thread(channel, plan.root.ts)
          .find((m) => !seen.has(m.ts) && hasButton(h.slack.message(channel, m.ts), 'talos-step-approve'));
        return request ? { request } : undefined;
      },
      { timeoutMs: 60_000, description: 'an approval request or the end of the operation' },
    );
    if ('done' in outcome && outcome.done) return outcome.done;
    if ('request' in outcome && outcome.request) {
      seen.add(outcome.request.ts);
      await approve(h, outcome.request, approver, channel);
    }
  }
}

/**
 * Every checkbox a message offers, ticked: what a person who checked each fact ticks before Start
 * (`clickButton`'s `ticks`). Empty when the message offers none.
 */
export function tickAll(h: Harness, channel: string, ts: string): Record<string, string[]> {
  const ticks: Record<string, string[]> = {};
  for (const block of (h.slack.message(channel, ts)?.blocks ?? []) as { elements?: unknown[] }[]) {
    for (const element of (block.elements ?? []) as { type?: string; action_id?: string; options?: { value: string }[] }[]) {
      if (element.type === 'checkboxes' && element.action_id !== undefined)
        ticks[element.action_id] = (element.options ?? []).map((o) => o.value);
    }
  }
  return ticks;
}
