import type { Operation, Step } from '../ops/operation.ts';
import type { Block, ChatMessage } from '../port/chat-port.ts';

/**
 * How an operation of one kind reads in Slack: its root message, its step labels, its approval
 * questions and its rehearsal note. Each playbook declares its own in its folder; the message
 * builders here take it as a parameter, so no presenter switches on the operation's kind.
 */
export interface Presentation {
  /** What an operation of the kind is, e.g. `Talos upgrade` (the Home tab's lock). */
  name: string;
  /** How a person names one when it names its node, e.g. `Replacement` (of talos-prd-cp-2); default `name`. */
  noun?: string;
  /** The root message's header, e.g. `Talos upgrade v1.11.6 → v1.12.1: production`. */
  title(op: Operation): string;
  /** How the steps run, shown after "Steps". */
  order: string;
  /** The gates listed under a plan that waits for Start. */
  gates: string;
  /** The Start button's confirm dialog title. */
  startTitle: string;
  /** The Start button's label when it is not `Start` (a Terraform change's `Apply`). */
  startLabel?: string;
  /** The state of a plan that waits for its Start, when it is not an operator's. */
  plannedText?: string;
  /** The runbook's items the starter confirms with Start; the bot cannot check them itself. */
  reviewItems: readonly string[];
  /**
   * What the starter ticks on the plan before Start is accepted, one checkbox each: a fact only a person can
   * check (the uploaded ISO against the bot's sha256). Start without every tick is refused; the record keeps each.
   */
  startConfirmations?(op: Operation): StartConfirmation[];
  /**
   * What the approver ticks on a step's approval request before Approve is accepted, one checkbox each (a
   * replacement's apply: the uploaded ISO against the bot's sha256). Approve without every tick is refused.
   */
  approvalConfirmations?(op: Operation, step: Step): StartConfirmation[];
  /** Blocks after the title's fields: what a reviewer needs before the steps. */
  details?(op: Operation): Block[];
  /** A context line under the steps. */
  context(op: Operation): string | undefined;
  /** Blocks at the end of the root message (a Terraform change's Plan again). */
  closing?(op: Operation): Block[];
  /** One step as the root message, the status and the audit name it. */
  stepLabel(step: Step): string;
  /** The root message's text where the kind leads with its own (what happened, then the operation); otherwise the common one. */
  rootText?(op: Operation): string | undefined;
  /**
   * The operation's state in words where the generic one would mislead, e.g. a plan that changes
   * nothing reads `✅ no changes` rather than `⛔ refused`; undefined: the generic one.
   */
  stateText?(op: Operation): string | undefined;
  /** What a planned step waits for, after its label, e.g. ` · approval · health gate`. */
  plannedGates?(step: Step): string | undefined;
  /** How its approval requests ask; absent for a kind that asks none. */
  approval?: ApprovalWording;
  /** The production plan's note on staging rehearsal; absent for a kind that needs none. */
  rehearsal?: RehearsalWording;
  /**
   * The message that paged the approvers (the thread reply of the audit entry `event`), redrawn once
   * someone acted on the plan: its buttons go and it says the outcome (applied by whom, rejected, failed).
   * `message` draws it for the operation as it stands; undefined leaves it as it is.
   */
  paged?: { event: string; message(op: Operation): ChatMessage | undefined };
}

/** The words of an approval request. */
export interface ApprovalWording {
  /** The question's verb: `Apply` (a Kubernetes upgrade) or `Approve`. */
  verb: 'Apply' | 'Approve';
  /** What is approved, e.g. `the upgrade of control plane talos-cp-2 (10.0.30.12) to v1.12.1`. */
  subject(op: Operation, step: Step): string;
  /** What an Approve does to the node, in its confirm dialog, e.g. `talosctl rollback of talos-w-1 (10.0.20.21): it reboots …`. */
  effect?(step: Step): string;
  /** The notification's place and short question, e.g. `{ what: 'control plane 1 of 3', ask: 'talos-prd-cp-1 → Talos v1.13.9' }`. */
  headline?(op: Operation, step: Step): { what: string; ask: string };
  /** A finished step's result in a few words for the next request, e.g. `v1.13.9, Ready, etcd 3/3, gate passed`. */
  result?(step: Step): string;
  /** What one approval of `count` steps covers under `approvalScope: operation`, e.g. `all 3 control planes`. */
  covers?(count: number): string;
}

/** The words of a production plan's staging rehearsal. */
export interface RehearsalWording {
  /** The note under the plan: found, overridden, or missing with the Override button. */
  blocks(op: Operation, rehearsal: NonNullable<Operation['rehearsal']>): Block[];
  /** What a Start without rehearsal lacks, e.g. `no staging rehearsal of v1.12.1`. */
  missing(op: Operation): string;
  /** The override's audit detail. */
  overridden(op: Operation): string;
}

/** Every kind's presentation, looked up by a stored operation's kind. */
export type PresentationLookup = (kind: string) => Presentation;

/** One checkbox the starter ticks before Start. */
export interface StartConfirmation {
  /** The option's value: bound to what it confirms (a hash), so a tick never stands for another. */
  value: string;
  /** The option's text (Block Kit: at most 75 characters). */
  text: string;
  /** Under the text (at most 75 characters). */
  description?: string;
  /** What the record keeps once ticked, in full. */
  record: string;
}
