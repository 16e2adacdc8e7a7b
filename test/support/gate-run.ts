import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, type Harness } from './harness.ts';

/** A finished `/talos health`: its verdict, its replies and the evidence file attached to its thread. */
export interface GateRun {
  root: Message;
  /** The thread's replies without the file: the one line per check, and one reply per failing or warning check. */
  replies: Message[];
  /** The full evidence of every check, as attached to the thread. */
  evidence: string;
}

/** Whether the thread of a gate's root holds its evidence file, which the gate attaches last. */
function hasEvidence(h: Harness, channel: string, ts: string): boolean {
  return h.slack.thread(channel, ts).some((m) => (m.files ?? []).length > 0);
}

/** The gate that finished at root `ts` of `channel`, read back from the emulator. */
export function gateRunAt(h: Harness, channel: string, root: Message): GateRun {
  const file = h.slack.uploadedFiles().find((f) => f.thread_ts === root.ts);
  return {
    root,
    replies: h.slack.thread(channel, root.ts).filter((m) => (m.files ?? []).length === 0),
    evidence: file?.content ?? '',
  };
}

/** Waits for the next health gate's verdict in `channel` posted after `before` channel messages, with its evidence attached. */
export async function waitForGate(h: Harness, channel: string, before: number, timeoutMs = 30_000): Promise<GateRun> {
  const root = await h.slack.waitFor(
    () => {
      const latest = h.slack.channelMessages(channel).slice(before)[0];
      if (!latest || !/Health gate (passed|failed)/.test(latest.text)) return undefined;
      return hasEvidence(h, channel, latest.ts) ? latest : undefined;
    },
    { timeoutMs, description: 'a finished health gate' },
  );
  return gateRunAt(h, channel, root);
}

/** `/talos health` through Slack, then the finished gate. */
export async function runGate(h: Harness, channel: string = CHANNELS.production, text = 'health', user?: string): Promise<GateRun> {
  const before = h.slack.channelMessages(channel).length;
  await h.command(text, user === undefined ? { channel } : { channel, user });
  return waitForGate(h, channel, before);
}

/**
 * What the gate says of one check: the reply naming it (its own reply when it failed or warned,
 * else its line in the one-line-per-check reply) and the evidence file, where its detail is.
 */
export function checkText(run: GateRun, title: string): string {
  const found = run.replies.find((r) => r.text.includes(title) || JSON.stringify(r.blocks ?? []).includes(title));
  if (!found) throw new Error(`no reply names ${title}: ${run.replies.map((r) => r.text).join('\n')}`);
  return `${found.text}${JSON.stringify(found.blocks ?? [])}\n${run.evidence}`;
}
