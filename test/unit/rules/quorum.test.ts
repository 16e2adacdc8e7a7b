import { describe, expect, it } from 'vitest';
import { quorumAfterRemoval, quorumForReplacement, quorumWhileRebooting, toleranceWhileRebooting } from '../../../src/rules/quorum.ts';

describe('quorumAfterRemoval', () => {
  it('allows removing one of three and spells out the arithmetic', () => {
    expect(quorumAfterRemoval(3)).toEqual({
      quorum: 2,
      remaining: 2,
      remainingQuorum: 2,
      ok: true,
      explanation: '3 members need 2 for quorum; after removal 2 remain, which keep quorum (2 of 2) but tolerate no further failure',
    });
  });

  it('counts the failures the remaining members tolerate', () => {
    expect(quorumAfterRemoval(5).explanation).toBe(
      '5 members need 3 for quorum; after removal 4 remain, which keep quorum (3 of 4) and tolerate 1 more failure',
    );
  });

  it('refuses removing the only member: that is disaster recovery', () => {
    expect(quorumAfterRemoval(1)).toEqual({
      quorum: 1,
      remaining: 0,
      remainingQuorum: 0,
      ok: false,
      explanation:
        '1 member need 1 for quorum; removing the only member leaves no cluster: that is etcd disaster recovery, not a node removal',
    });
  });

  it('refuses removing a healthy member when the others cannot keep quorum', () => {
    const result = quorumAfterRemoval(3, { healthy: 2 });

    expect([result.ok, result.explanation]).toEqual([
      false,
      '3 members need 2 for quorum; after removal 2 remain (1 healthy), which cannot keep quorum (2 of 2 needed): do not remove this member',
    ]);
  });

  it('allows removing the failed member of a degraded three-member cluster', () => {
    expect(quorumAfterRemoval(3, { healthy: 2, removingHealthy: false }).ok).toBe(true);
  });

  it('refuses when quorum is already lost', () => {
    expect(quorumAfterRemoval(3, { healthy: 1 })).toEqual(
      expect.objectContaining({
        ok: false,
        explanation: '3 members need 2 for quorum but only 1 is healthy: quorum is already lost; use disaster recovery',
      }),
    );
  });

  it('rejects impossible counts', () => {
    expect(() => quorumAfterRemoval(0)).toThrow(RangeError);
    expect(() => quorumAfterRemoval(2.5)).toThrow(RangeError);
    expect(() => quorumAfterRemoval(3, { healthy: 4 })).toThrow(RangeError);
  });
});

describe('quorumWhileRebooting', () => {
  it('refuses rebooting either member of a two-member etcd: the one left is not a majority', () => {
    expect(quorumWhileRebooting(2, 1, '10.0.30.11')).toEqual({
      ok: false,
      explanation: '2 members need 2 for quorum; while 10.0.30.11 reboots 1 other healthy member remains, which cannot keep quorum',
    });
  });

  it('allows one of three when the other two are healthy, and refuses it when one of them is not', () => {
    expect(quorumWhileRebooting(3, 2, '10.0.30.12').ok).toBe(true);
    expect(quorumWhileRebooting(3, 1, '10.0.30.12').ok).toBe(false);
  });

  it("accepts the only member only as the cluster's only control plane, and says the API goes down", () => {
    expect(quorumWhileRebooting(1, 0, '10.0.20.204', true)).toEqual({
      ok: true,
      explanation:
        '1 member need 1 for quorum; 10.0.20.204 is the only member and the only control plane: etcd and the Kubernetes API are down while it reboots',
    });
    expect(quorumWhileRebooting(1, 0, '10.0.20.204', false).ok).toBe(false);
  });
});

describe('quorumForReplacement', () => {
  it('states the arithmetic of replacing a failed member of three', () => {
    expect(quorumForReplacement(3, 2, { isMember: true, replacedHealthy: false })).toEqual({
      ok: true,
      explanation:
        '3 members now, 2 healthy, quorum 2; after its member is removed 2 members remain (2 healthy), quorum 2; during the replacement the cluster survives no further failure; once the new member votes 3 members, quorum 2',
    });
  });

  it('counts the failures five members survive while one is replaced', () => {
    expect(quorumForReplacement(5, 4, { isMember: true, replacedHealthy: false }).explanation).toContain(
      'after its member is removed 4 members remain (4 healthy), quorum 3; during the replacement the cluster survives 1 more failure',
    );
  });

  it('refuses when quorum is already lost: three members, two down', () => {
    const verdict = quorumForReplacement(3, 1, { isMember: true, replacedHealthy: false });
    expect(verdict.ok).toBe(false);
    expect(verdict.explanation).toContain('quorum is already lost');
  });

  it('refuses replacing a member that still votes when the rest then cannot keep quorum: five members, two others down', () => {
    expect(quorumForReplacement(5, 3, { isMember: true, replacedHealthy: true })).toEqual({
      ok: false,
      explanation:
        '5 members now, 3 healthy, quorum 3; after its member is removed 4 members remain (2 healthy), quorum 3, which cannot keep quorum (3 of 4 needed): do not replace this node before the others are healthy',
    });
    // The same count with the replaced member among the failed ones keeps quorum.
    expect(quorumForReplacement(5, 3, { isMember: true, replacedHealthy: false }).ok).toBe(true);
  });

  it('counts a member already removed as gone', () => {
    expect(quorumForReplacement(2, 2, { isMember: false, replacedHealthy: false }).explanation).toBe(
      '2 members now, 2 healthy, quorum 2; its member is already removed: 2 members remain; during the replacement the cluster survives no further failure; once the new member votes 3 members, quorum 2',
    );
  });

  it('refuses the only member', () => {
    expect(quorumForReplacement(1, 1, { isMember: true, replacedHealthy: true }).ok).toBe(false);
  });
});

describe('toleranceWhileRebooting', () => {
  it.each([
    [3, 'etcd 2 of 3: no further failure tolerated'],
    [5, 'etcd 4 of 5: one more failure tolerated'],
    [7, 'etcd 6 of 7: 2 more failures tolerated'],
    [2, 'etcd 1 of 2: no quorum, etcd and the Kubernetes API are down'],
  ])('says what %i members tolerate while one reboots', (members, words) => {
    // Act
    const said = toleranceWhileRebooting(members);

    // Assert
    expect(said).toBe(words);
  });
});
