import { errorText } from '../../../src/chat/error-text.ts';
import { declarationOf, declaredInState, KIND_WORDS, RUNBOOK_NAMES, type VersionKind } from '../../../src/tofu/declared-versions.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';

/**
 * The exact Terraform change an upgrade to `version` leaves to make, read against what the state declares
 * now: the line of the variable (or the output the inventory names) with the new value; nothing when it
 * already declares it; and, when the bot cannot read it, the runbook's variable and why the check is off.
 */
export async function declaredFollowUp(ctx: WalkContext, kind: VersionKind, version: string): Promise<string> {
  const what = KIND_WORDS[kind];
  let declared;
  try {
    declared = (await declaredInState(ctx.session.outputs, probeSignal(ctx)))[kind];
  } catch (error) {
    declared = { off: errorText(error) };
  }
  if ('off' in declared)
    return `Set \`${RUNBOOK_NAMES[kind]} = "${version}"\` (the bot could not read the declared ${what} version: ${declared.off})`;
  if (declared.version === version) return `Terraform already declares ${what} ${version}: no change to make`;
  return `Make the Terraform change \`${declarationOf(declared.source, version)}\` (it declares ${declared.version} now)`;
}
