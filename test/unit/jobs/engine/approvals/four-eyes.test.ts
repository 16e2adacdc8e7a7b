import { describe, expect, it } from 'vitest';
import { approversToPage, fourEyesRefusal, stillToApprove } from '../../../../../jobs/engine/approvals/four-eyes.ts';
import { anOperation } from '../../../../support/builders.ts';

const strict = { name: 'production', requireDistinctApprover: true, approvers: ['U0ALICE', 'U0BOB', 'U0CAROL'] };
const lax = { ...strict, name: 'staging', requireDistinctApprover: false };
const op = anOperation({ requestedBy: 'U0ALICE', startedBy: 'U0BOB' });

describe('fourEyesRefusal', () => {
  it.each([
    ['the requester', strict, 'U0ALICE', true],
    ['the starter', strict, 'U0BOB', true],
    ['another approver', strict, 'U0CAROL', false],
    ['the requester where four eyes are off', lax, 'U0ALICE', false],
    ['the starter where four eyes are off', lax, 'U0BOB', false],
  ])('%s: refused %s', (_who, cluster, user, refusedExpected) => {
    const refusal = fourEyesRefusal(cluster, op, user, 'approve it');
    expect(refusal !== undefined).toBe(refusedExpected);
  });

  it('names the cluster, the operation and what another approver must do, and says nothing changed', () => {
    const refusal = fourEyesRefusal(strict, op, 'U0ALICE', 'override the window')!;
    expect(refusal).toContain('*production* requires four eyes');
    expect(refusal).toContain(`\`${op.id}\``);
    expect(refusal).toContain('another approver must override the window');
    expect(refusal).toContain('Nothing changed.');
  });

  it('refuses the requester of an operation nobody started yet, and nobody else', () => {
    const planned = anOperation({ requestedBy: 'U0ALICE', startedBy: undefined });
    expect(fourEyesRefusal(strict, planned, 'U0ALICE', 'approve it')).toBeDefined();
    expect(fourEyesRefusal(strict, planned, 'U0BOB', 'approve it')).toBeUndefined();
  });
});

describe('approversToPage', () => {
  it.each([
    ['four eyes leave out the requester and the starter', strict, ['U0CAROL']],
    ['without four eyes every approver is paged', lax, ['U0ALICE', 'U0BOB', 'U0CAROL']],
    // Paging nobody would leave the request unseen: the approvers are paged, and four eyes refuse the click.
    ['when four eyes would leave nobody, all approvers are paged', { ...strict, approvers: ['U0ALICE', 'U0BOB'] }, ['U0ALICE', 'U0BOB']],
    ['a user group is paged whole', { ...strict, approvers: ['S0ONCALL', 'U0ALICE'] }, ['S0ONCALL']],
  ])('%s', (_case, cluster, expected) => {
    expect(approversToPage(cluster, op)).toEqual(expected);
  });

  it('does not change the cluster it reads', () => {
    const cluster = { ...strict, approvers: ['U0ALICE', 'U0BOB'] };
    approversToPage(cluster, op).push('U0MALLORY');
    expect(cluster.approvers).toEqual(['U0ALICE', 'U0BOB']);
  });
});

describe('stillToApprove', () => {
  const four = { approvers: ['U0ALICE', 'U0BOB', 'U0CAROL', 'U0DAVE'] };

  it.each([
    ['nobody approved yet: all but the requester and the starter', [], ['U0CAROL', 'U0DAVE']],
    ['one approved: not them again', [{ by: 'U0CAROL' }], ['U0DAVE']],
    ['the same person twice counts once', [{ by: 'U0CAROL' }, { by: 'U0CAROL' }], ['U0DAVE']],
    ['all approved: nobody left', [{ by: 'U0CAROL' }, { by: 'U0DAVE' }], []],
  ])('%s', (_case, given, expected) => {
    expect(stillToApprove(four, op, given)).toEqual(expected);
  });

  it('holds four eyes even where the cluster does not require them', () => {
    expect(stillToApprove({ ...four, requireDistinctApprover: false } as typeof four, op, [])).toEqual(['U0CAROL', 'U0DAVE']);
  });

  it('pages nobody when the only approvers left are barred (never back the requester)', () => {
    // approversToPage falls back to everyone when nobody is left; the already-approved and the requester stay barred.
    expect(stillToApprove({ approvers: ['U0ALICE', 'U0BOB'] }, op, [])).toEqual([]);
  });
});
