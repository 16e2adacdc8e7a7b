import { WebClient } from '@slack/web-api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { clickRefusal } from '../../../handlers/action-permissions.ts';
import { createAuthorizer, MembershipUnknown } from '../../../handlers/authorize.ts';
import { ACTION } from '../../../src/chat/buttons.ts';
import { anOperation } from '../../support/builders.ts';
import { type SlackEmulator, startSlackEmulator } from '../../slack-emulator/index.ts';

const ANA = 'U0ANA';
const BEN = 'U0BEN';

let emu: SlackEmulator;

beforeEach(async () => {
  emu = await startSlackEmulator({
    channels: [{ id: 'C0OPS', name: 'ops' }],
    users: [
      { id: ANA, name: 'ana' },
      { id: BEN, name: 'ben' },
    ],
    usergroups: [{ id: 'S0SRE', users: [ANA] }],
  });
});

afterEach(async () => {
  await emu.close();
});

function authorizer(failures: { group: string; error: string }[]) {
  const client = new WebClient(emu.botToken, { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } });
  return createAuthorizer(client, { onLookupFailure: (group, error) => failures.push({ group, error }) });
}

describe('user-group membership', () => {
  it('is read from Slack: a member passes, anyone else is refused', async () => {
    const auth = authorizer([]);
    expect(await auth.isMember(ANA, ['S0SRE'])).toBe(true);
    expect(await auth.isMember(BEN, ['S0SRE'])).toBe(false);
  });

  it('that Slack would not list is reported and counted as unknown, never as "not a member", and allows nothing', async () => {
    // Arrange
    const failures: { group: string; error: string }[] = [];
    const auth = authorizer(failures);
    emu.faults.serverError({ methods: ['usergroups.users.list'], count: 1 });

    // Act
    const outcome = await auth.isMember(ANA, ['S0SRE']).then(
      (member) => ({ member }),
      (error: unknown) => ({ error }),
    );

    // Assert
    expect(outcome).toEqual({ error: expect.any(MembershipUnknown) });
    expect((outcome as { error: Error }).error.message).toMatch(/could not be checked with Slack .*try again in a minute/);
    expect(failures).toEqual([{ group: 'S0SRE', error: expect.any(String) }]);
  });

  it('still grants what another readable group or the user id grants when one group cannot be read', async () => {
    const failures: { group: string; error: string }[] = [];
    const auth = authorizer(failures);
    emu.faults.serverError({ methods: ['usergroups.users.list'], count: 1 });
    expect(await auth.isMember(ANA, ['S0GONE', ANA])).toBe(true);
    expect(await auth.isMember(ANA, ['S0NONE', 'S0SRE'])).toBe(true);
    expect(failures.map((f) => f.group)).toEqual(['S0NONE']);
  });

  it('turns a click whose group cannot be read into "try again", not "only approvers may"', async () => {
    // Arrange
    const auth = authorizer([]);
    emu.faults.serverError({ methods: ['usergroups.users.list'], count: 1 });
    const op = anOperation({ state: 'awaiting-approval' });
    const cluster = { name: op.cluster, channel: 'C0OPS', operators: ['S0SRE'], approvers: ['S0SRE'] } as never;

    // Act
    const refusal = await clickRefusal(auth, {} as never, cluster, ACTION.approve, op, ANA);

    // Assert
    expect(refusal).toMatch(/could not be checked with Slack .*try again/);
  });
});
