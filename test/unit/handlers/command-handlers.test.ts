import { describe, expect, it } from 'vitest';
import { COMMAND_HANDLERS } from '../../../handlers/commands/index.ts';
import { PLAYBOOKS } from '../../../jobs/playbooks/index.ts';

describe('the command handlers', () => {
  it('take every playbook command by the name its playbook declares, and nothing else besides status, cancel, record and doctor', () => {
    // Arrange
    const declared = Object.values(PLAYBOOKS).map((p) => p.command.name);

    // Act
    const handled = Object.keys(COMMAND_HANDLERS);

    // Assert
    expect(handled.sort()).toEqual([...declared, 'status', 'cancel', 'record', 'doctor'].sort());
  });
});
