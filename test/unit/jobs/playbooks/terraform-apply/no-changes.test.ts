import { describe, expect, it } from 'vitest';
import { changesNothing, terraformApplyTexts } from '../../../../../jobs/playbooks/terraform-apply/texts.ts';
import { NO_CHANGES } from '../../../../../src/rules/terraform-change.ts';
import { anOperation } from '../../../../support/builders.ts';

const terraform = { commit: 'c'.repeat(40), dirty: false, summary: 'no changes', changes: [], listing: [], adds: [] };

describe('a Terraform plan that changes nothing', () => {
  it('reads as good news in the title, the notification text and the state, not as a refusal', () => {
    // Arrange
    const op = anOperation({ kind: 'terraform-apply', state: 'refused', refusals: [NO_CHANGES], data: { terraform }, steps: [] });

    // Act / Assert
    expect(changesNothing(op)).toBe(true);
    expect(terraformApplyTexts.title(op)).toBe('✅ No changes: Terraform matches production');
    expect(terraformApplyTexts.rootText?.(op)).toBe(
      `✅ No changes: Terraform matches production (commit cccccccccccc); nothing to apply (${op.id})`,
    );
    expect(terraformApplyTexts.stateText?.(op)).toBe('✅ no changes, nothing to apply');
  });

  it('stays a refusal when anything else is wrong with it', () => {
    const op = anOperation({ kind: 'terraform-apply', state: 'refused', refusals: [NO_CHANGES, 'the tree is dirty'], data: { terraform } });
    expect(changesNothing(op)).toBe(false);
    expect(terraformApplyTexts.title(op)).toBe('Terraform change: production (no changes)');
    expect(terraformApplyTexts.stateText?.(op)).toBeUndefined();
  });
});
