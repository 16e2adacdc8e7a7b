import { declarationOf, KIND_WORDS, sourceWords, type VersionKind } from '../tofu/declared-versions.ts';
import { UPGRADE_WORDS, type VersionJudgement } from '../health/rules/declared-judgement.ts';

/** The versions read, by kind; those the bot could not read are left out. */
export function versionsOf(
  declared: Partial<Record<VersionKind, { version: string } | { off: string }>>,
): Partial<Record<VersionKind, string>> {
  return Object.fromEntries(Object.entries(declared).flatMap(([kind, d]) => ('version' in d ? [[kind, d.version]] : [])));
}

/** Per kind, whether a plan changes the version the state declares; a kind either side could not read is left out (counts as moving). */
export function declaredMoves(
  plan: Partial<Record<VersionKind, string>>,
  state: Partial<Record<VersionKind, string>>,
): Partial<Record<VersionKind, boolean>> {
  return Object.fromEntries(
    Object.entries(plan).flatMap(([kind, version]) => {
      const before = state[kind as VersionKind];
      return before === undefined ? [] : [[kind, before !== version]];
    }),
  );
}

/**
 * The refusals a plan earns from its declared versions: a version below what any node runs would
 * take it back; any other difference breaks "apply only after every node runs the declared version".
 * A version the bot cannot read turns the rule off for this plan: a note says so. A node it cannot ask
 * refuses a plan that moves the declared version (default: every one); one that leaves it as the state
 * declares it (a routine change while a node is down) is noted instead, since what runs was judged before.
 *
 * @param moves per kind, whether the plan changes the version the state declares; unknown counts as moving
 */
export function declaredPlanRules(
  judgements: VersionJudgement[],
  moves: Partial<Record<VersionKind, boolean>> = {},
): { refusals: string[]; notes: string[] } {
  const refusals: string[] = [];
  const notes: string[] = [];
  for (const j of judgements) {
    const what = KIND_WORDS[j.kind];
    if (j.state === 'off')
      notes.push(`⚠️ The rule "apply only after every node runs the declared ${what} version" is off for this plan: ${j.why}.`);
    else if (j.state === 'unknown' && moves[j.kind] === false)
      notes.push(
        `⚠️ Whether every node runs the declared ${what} ${j.declared} is unknown (${j.why.join('; ')}); the plan leaves it as declared, so it is not refused for it.`,
      );
    else if (j.state === 'unknown')
      refusals.push(
        `the plan declares ${what} ${j.declared}, and whether every node runs it is unknown (${j.why.join('; ')}): apply only after every node runs the declared version; plan again once every node answers`,
      );
    else if (j.state === 'drift' && j.newer.length > 0)
      refusals.push(
        `the plan declares ${what} ${j.declared} (${sourceWords(j.source)}), below what runs (${j.newer.join('; ')}): applying it would take ${what} back. ` +
          `Make the Terraform change \`${declarationOf(j.source, j.highest)}\`, commit it, and run \`/talos plan\` again`,
      );
    else if (j.state === 'drift')
      refusals.push(
        `the plan declares ${what} ${j.declared} (${sourceWords(j.source)}): apply only after every node already runs the declared ${what} version (${j.older.join('; ')}); ` +
          `\`/talos upgrade ${UPGRADE_WORDS[j.kind]} ${j.declared}\` upgrades the rest, and continues an upgrade to it that stopped half-way`,
      );
  }
  return { refusals, notes };
}
