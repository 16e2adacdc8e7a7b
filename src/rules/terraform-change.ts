import type { PlanOutcome } from '../tofu/run-plan.ts';
import { vmKeys } from '../tofu/parse-plan.ts';
import type { WorkingTree } from '../tofu/working-tree.ts';
import { KIND_WORDS, type VersionKind } from '../tofu/declared-versions.ts';
import { declaredMoves, declaredPlanRules } from './declared-versions.ts';
import type { VersionJudgement } from '../health/rules/declared-judgement.ts';

/** The plan that changes nothing: good news, and nothing to apply (so it is not offered for Apply). */
export const NO_CHANGES = 'No changes: Terraform matches the cluster, so there is nothing to apply';

/** What the bot knows around a reviewed plan, to judge whether the runbook lets it be applied. */
export interface ChangeFacts {
  cluster: string;
  outcome: PlanOutcome;
  tree: WorkingTree;
  /** Completed `/talos remove` operations of this cluster: the node's hostname and the operation. */
  removals: { op: string; nodeName: string }[];
  /** How each version the plan declares (Talos, Kubernetes) compares with what every node runs. */
  declared: VersionJudgement[];
  /** The versions the state declares before the plan, where the bot could read them. */
  stateDeclared?: Partial<Record<VersionKind, string>>;
  /** The completed upgrade of this cluster to the version the plan declares, per kind. */
  upgrades?: Partial<Record<VersionKind, { op: string; version: string }>>;
  /** Only when the plan adds a node: whether the cluster settled after the last join (no learner, one leader). */
  etcdSettled?: { ok: boolean; evidence: string[] };
}

export interface ChangeJudgement {
  /** Each reason the plan is never offered for Apply; empty when it may be. */
  refusals: string[];
  /** What the plan means, for the reviewer: follow-ups of earlier operations. */
  notes: string[];
}

const NEW_PLAN = 'fix it, commit, and run `/talos plan` again';

/**
 * What refuses any plan before its changes are read: the tools' own failures (fmt, validate, plan)
 * and a tree that is not exactly a commit (a reviewed change is a commit).
 */
export function planRefusals(outcome: ChangeFacts['outcome'], tree: ChangeFacts['tree']): string[] {
  const refusals: string[] = [];
  if (outcome.fmt.status === 'unformatted')
    refusals.push(`tofu fmt: ${outcome.fmt.files.length} file(s) are not formatted; run \`tofu fmt -recursive\`, commit, and plan again`);
  if (outcome.fmt.status === 'error') refusals.push(`tofu fmt -check could not run: ${outcome.fmt.lines[0] ?? 'no error message'}`);
  if (outcome.validate.status === 'invalid')
    refusals.push(`tofu validate: ${outcome.validate.lines[0] ?? 'the configuration is not valid'}; ${NEW_PLAN}`);
  if (outcome.plan.status === 'error')
    refusals.push(`tofu plan failed: ${outcome.plan.lines[0] ?? 'no error message'}; nothing can be applied`);
  if (outcome.plan.status === 'skipped') refusals.push(`tofu plan did not run: ${outcome.plan.because}`);

  if (tree.commit === undefined)
    refusals.push(
      `${tree.unknownBecause ?? 'the Terraform directory is not a git checkout'}: only a committed change can be applied, so this plan is shown but never applied`,
    );
  else if (tree.uncommitted === undefined)
    refusals.push(
      `whether the Terraform tree has uncommitted changes is unknown (${tree.unknownBecause ?? 'git did not answer'}), so this plan is shown but never applied`,
    );
  else if (tree.uncommitted.length > 0) {
    const files =
      tree.uncommitted.slice(0, 5).join(', ') + (tree.uncommitted.length > 5 ? `, and ${tree.uncommitted.length - 5} more` : '');
    refusals.push(
      `the Terraform working tree has uncommitted changes (${files}): a reviewed change is a commit, so this plan is shown but never applied; commit or discard them and plan again`,
    );
  }
  if (tree.ignoredInputs !== undefined && tree.ignoredInputs.length > 0) {
    const files =
      tree.ignoredInputs.slice(0, 5).join(', ') + (tree.ignoredInputs.length > 5 ? `, and ${tree.ignoredInputs.length - 5} more` : '');
    refusals.push(
      `the Terraform directory holds files git ignores that tofu reads all the same (${files}): they change the plan unreviewed, so this plan is shown but never applied; commit them, or remove them (a secret belongs in a \`TF_VAR_\` variable of the bot), and plan again`,
    );
  }
  return refusals;
}

/**
 * The runbook's "Change machine configuration" as rules over one plan: a formatted and valid
 * configuration, a committed tree (a reviewed change is a commit), something to apply, no
 * replacement of the cluster secrets or of a VM, a destroyed VM only after its node was removed,
 * the declared Talos and Kubernetes versions equal to what every node runs, and no new node while etcd still settles.
 */
export function judgeTerraformChange(facts: ChangeFacts): ChangeJudgement {
  const { outcome, tree } = facts;
  const refusals = planRefusals(outcome, tree);
  const notes: string[] = [];
  if (outcome.plan.status !== 'planned') return { refusals, notes };

  const { review } = outcome.plan;
  if (review.changes.length === 0) refusals.push(NO_CHANGES);
  for (const danger of review.dangers.filter((d) => d.level === 'stop')) refusals.push(`\`${danger.address}\` ${danger.meaning}`);

  for (const hostname of vmKeys(review, 'delete')) {
    const removal = facts.removals.find((r) => r.nodeName === hostname);
    if (removal === undefined)
      refusals.push(
        `the plan destroys the VM of ${hostname}, which no \`/talos remove\` of ${facts.cluster} reset and drained: remove the node with \`/talos remove\` first, then plan again`,
      );
    else notes.push(`Destroying the VM of ${hostname} is the expected follow-up of its removal ${removal.op}.`);
  }

  const planned = Object.fromEntries(facts.declared.flatMap((j) => ('declared' in j ? [[j.kind, j.declared]] : [])));
  const versions = declaredPlanRules(facts.declared, declaredMoves(planned, facts.stateDeclared ?? {}));
  refusals.push(...versions.refusals);
  notes.push(...versions.notes);
  for (const j of facts.declared) {
    if (j.state !== 'match') continue;
    const before = facts.stateDeclared?.[j.kind];
    if (before === undefined || before === j.declared) continue;
    const upgrade = facts.upgrades?.[j.kind];
    const what = KIND_WORDS[j.kind];
    notes.push(
      upgrade !== undefined && upgrade.version === j.declared
        ? `This is the Terraform follow-up of the ${what} upgrade ${upgrade.op}: the declared ${what} version moves from ${before} to ${j.declared}, which every node already runs.`
        : `The declared ${what} version moves from ${before} to ${j.declared}, which every node already runs.`,
    );
  }

  const adds = vmKeys(review, 'create');
  if (adds.length > 1)
    refusals.push(
      `the plan adds ${adds.length} nodes (${adds.join(', ')}) at once: add one node per change, and wait for it to join before the next`,
    );
  if (adds.length > 0 && facts.etcdSettled !== undefined && !facts.etcdSettled.ok) {
    refusals.push(
      `Before you add another node, wait for all members to report the same leader (and no learner to remain): ${facts.etcdSettled.evidence.join('; ')}`,
    );
  }
  return { refusals, notes };
}
