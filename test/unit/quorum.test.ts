import { describe, expect, it } from 'vitest';
import { quorumAfterRemoval } from '../../src/rules/quorum.ts';

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
      explanation: '1 member need 1 for quorum; removing the only member leaves no cluster: that is etcd disaster recovery, not a node removal',
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
      expect.objectContaining({ ok: false, explanation: '3 members need 2 for quorum but only 1 is healthy: quorum is already lost; use disaster recovery' }),
    );
  });

  it('rejects impossible counts', () => {
    expect(() => quorumAfterRemoval(0)).toThrow(RangeError);
    expect(() => quorumAfterRemoval(2.5)).toThrow(RangeError);
    expect(() => quorumAfterRemoval(3, { healthy: 4 })).toThrow(RangeError);
  });
});
