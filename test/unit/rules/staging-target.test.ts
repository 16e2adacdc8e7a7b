import { describe, expect, it } from 'vitest';
import { judgeStagingTarget, unrehearsedNote } from '../../../src/rules/staging-target.ts';

const image = (schematic: string): string => `factory.talos.dev/nocloud-installer/${schematic}:v1.12.11`;
const DEFAULT = image('376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba');
const LONGHORN = image('613e1592b2da41ae5e265e8789429f22e121aab91cb4deb6bc3c0b6262961245');
const OTHER = image('ce4c980550dd2ab1b17bbf2b08801c7eb59418eafe8f279833297925d67c7515');

describe('the exact target in staging', () => {
  it('counts a staging upgrade that installed the same image on the same class, naming the classes staging lacks', () => {
    // Act
    const verdict = judgeStagingTarget({ default: DEFAULT, longhorn: LONGHORN }, { default: DEFAULT });

    // Assert
    expect(verdict).toEqual({ counts: true, unrehearsed: ['longhorn'] });
    expect(unrehearsedNote('op-stg1', verdict.unrehearsed)).toBe(
      'The staging rehearsal op-stg1 had no Longhorn nodes: the Longhorn installer image of this upgrade was not rehearsed in staging.',
    );
  });

  it('does not count a staging upgrade to the same version with another schematic on a class both have', () => {
    // Act
    const verdict = judgeStagingTarget({ default: DEFAULT, longhorn: LONGHORN }, { default: OTHER });

    // Assert
    expect(verdict.counts).toBe(false);
    expect(verdict.why).toBe(`its default nodes installed ${OTHER}, production's get ${DEFAULT}`);
  });

  it('does not count a staging upgrade that recorded no image per class, or shares no class with production', () => {
    // Act
    const unrecorded = judgeStagingTarget({ default: DEFAULT }, undefined);
    const disjoint = judgeStagingTarget({ longhorn: LONGHORN }, { default: DEFAULT });

    // Assert
    expect(unrecorded.counts).toBe(false);
    expect(unrecorded.why).toContain('recorded no installer image per node class');
    expect(disjoint).toEqual({ counts: false, why: 'it upgraded none of the node classes production has', unrehearsed: ['longhorn'] });
  });

  it('says nothing of classes when staging rehearsed every one', () => {
    // Act
    const verdict = judgeStagingTarget({ default: DEFAULT, longhorn: LONGHORN }, { default: DEFAULT, longhorn: LONGHORN });

    // Assert
    expect(verdict).toEqual({ counts: true, unrehearsed: [] });
    expect(unrehearsedNote('op-stg1', verdict.unrehearsed)).toBeUndefined();
  });
});
