import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, commandReply, startHarness, USERS, type AckedCommand, type Harness } from '../support/harness.ts';
import { opLink, requestUpgrade, waitForRootState } from '../support/upgrade-flow.ts';

/** In a user group only: dave is an operator through `S0SRE`, never by his own id. */
const GROUP = 'S0SRE';

let h: Harness;

beforeAll(async () => {
  h = await startHarness({ inventory: { operators: [USERS.alice, USERS.bob, GROUP] } });
});

afterAll(async () => {
  await h?.stop();
});

/** Sends `/talos <text>` and returns its ack; fails when the emulator's 3-second ack deadline passed first. */
async function acked(text: string, user: string): Promise<AckedCommand> {
  const result = await h.slack.sendSlashCommand({ user, channel: CHANNELS.production, text });
  if (result.timedOut) throw new Error(`/talos ${text} was not acked while Slack held the bot's calls (${result.reason})`);
  return result;
}

/** The process id of the redis-server at `url`, as it reports it. */
async function serverPid(url: string): Promise<number> {
  const client = new Redis(url);
  try {
    const pid = Number(/^process_id:(\d+)/m.exec(await client.info('server'))?.[1]);
    if (!Number.isInteger(pid) || pid <= 0) throw new Error(`redis-server at ${url} reported no process_id`);
    return pid;
  } finally {
    client.disconnect();
  }
}

describe('every slash command is acked before the bot calls Slack or Redis', () => {
  it('acks an operator known only through a user group before Slack answers the group lookup', async () => {
    // Arrange: Slack does not answer usergroups.users.list until the test says so.
    const held = h.slack.faults.hold({ methods: ['usergroups.users.list'] });

    // Act
    const ack = await acked('rollback 192.0.2.1', USERS.dave);
    const lookupsAnsweredAtAck = h.slack.callsTo('usergroups.users.list').length;
    await h.slack.waitFor(() => held.waiting === 1, { timeoutMs: 10_000, description: 'the bot asking Slack who is in S0SRE' });
    held.release();
    const reply = await commandReply(h.slack, ack);

    // Assert: the ack came while the lookup was held; the reply, after it was answered, shows dave passed as an operator.
    expect(ack.payload).toEqual({});
    expect(lookupsAnsweredAtAck).toBe(0);
    expect(held.arrived).toEqual(['usergroups.users.list']);
    expect(h.slack.callsTo('usergroups.users.list').map((c) => [c.args.usergroup, c.ok])).toEqual([[GROUP, true]]);
    expect(reply).toContain('192.0.2.1 is not a node of *production*');
  });

  it('acks /talos cancel before any Slack Web API call it makes', async () => {
    // Arrange: a planned operation, then Slack holds every Web API call.
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11');
    const held = h.slack.faults.hold();
    const answeredBefore = h.slack.apiCalls.length;

    // Act
    const ack = await acked(`cancel ${plan.opId}`, USERS.alice);
    const answeredAtAck = h.slack.apiCalls.length;
    // The cancel edits the operation's messages and flushes its audit; those calls reach Slack only after the ack.
    await h.slack.waitFor(() => held.arrived.some((m) => m.startsWith('chat.')), {
      timeoutMs: 10_000,
      description: 'the cancel calling Slack',
    });
    held.release();
    const reply = await commandReply(h.slack, ack);

    // Assert
    expect(ack.payload).toEqual({});
    expect(answeredAtAck).toBe(answeredBefore);
    expect(reply).toBe(`Cancelled ${opLink(plan)}; *production* is free for the next operation.`);
    await waitForRootState(h, plan, /cancelled/);
  });

  it('acks /talos status while Redis does not answer, and answers once it does', async () => {
    // Arrange: a stopped redis-server keeps every connection open and answers nothing.
    const redisPid = await serverPid(h.redis.url);
    process.kill(redisPid, 'SIGSTOP');
    let ack: AckedCommand;
    try {
      // Act
      ack = await acked('status', USERS.alice);
    } finally {
      process.kill(redisPid, 'SIGCONT');
    }
    const reply = await commandReply(h.slack, ack);

    // Assert
    expect(ack.payload).toEqual({});
    expect(reply).toMatch(/^\*production\* — idle, no operation holds it/);
  });

  it('still answers help and the read-only gates in the ack itself', async () => {
    // Arrange: were either to call Slack before its ack, the ack would miss its deadline.
    const held = h.slack.faults.hold();

    // Act
    const help = await acked('help', USERS.eve);
    const gate = await acked('health', USERS.eve);
    held.release();

    // Assert
    expect(help.payload.text).toContain('*`/talos` commands*');
    expect(gate.payload.text).toContain('Running the health gate on *production*');
  });
});
