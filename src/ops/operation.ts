import { z } from 'zod';
import { Baseline } from '../health/baseline.ts';

/**
 * An operation is the unit of audit: one mutating command from plan to end. It lives
 * in Redis, so any replica can continue it after a crash and every button click is
 * checked against it.
 */
/**
 * How an operation kind and a step kind are spelled: lower-case words joined by dashes, e.g.
 * `talos-upgrade`, `upgrade-worker`. Which kinds exist is the playbook registry's to say, so a new
 * playbook names its kinds in its own folder; the engine refuses an operation of a kind no playbook runs.
 */
export const KIND_NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/;

export const OperationState = z.enum([
  'preflight',
  'refused',
  'planned',
  'running',
  'awaiting-approval',
  /** The next step would start outside the cluster's maintenance window: it waits for the window, or an approver's override. */
  'waiting-window',
  'paused',
  'failed',
  'completed',
  'cancelled',
]);
export type OperationState = z.infer<typeof OperationState>;

export const StepStatus = z.enum(['pending', 'running', 'done', 'skipped', 'failed']);
export type StepStatus = z.infer<typeof StepStatus>;

export const Step = z.object({
  id: z.string(),
  /** The step's kind, one of its playbook's (e.g. `upgrade-worker`). */
  kind: z.string().regex(KIND_NAME),
  node: z.string().optional(),
  /** Kubernetes node name / hostname, for messages. */
  nodeName: z.string().optional(),
  /** Physical host from the host label, for the approval message. */
  host: z.string().optional(),
  image: z.string().optional(),
  status: StepStatus,
  /** Set once talosctl was asked to change the node: a resumed job observes, and asks again only when the node shows it never got the request. */
  issuedAt: z.string().optional(),
  /** The node's boot ID (Kubernetes `nodeInfo.bootID`) when its upgrade was requested: a node still on it has not rebooted since. */
  issuedBootId: z.string().optional(),
  startedAt: z.string().optional(),
  endedAt: z.string().optional(),
  detail: z.string().optional(),
  /** Version the node reported before the step. */
  fromVersion: z.string().optional(),
  /** A node a Terraform apply added, once it joined: its address and role, for the gate that follows. */
  joined: z.object({ address: z.string(), role: z.enum(['controlplane', 'worker']) }).optional(),
  /**
   * Two approvers' explicit word to start this step outside the maintenance window: the first
   * (`by`) and the distinct second who confirmed (`secondBy`). An operation stored by an earlier
   * version, which needed one, has no second.
   */
  windowOverride: z.object({ by: z.string(), at: z.string(), secondBy: z.string().optional(), secondAt: z.string().optional() }).optional(),
});
export type Step = z.infer<typeof Step>;

export const Approval = z.object({
  step: z.string(),
  /** Changes with every approval request, so a button from an older message is recognisably stale. */
  nonce: z.string(),
  messageTs: z.string(),
  /** The audit entry that asks for it: its reply is the request's message. */
  seq: z.number().int().optional(),
  requestedAt: z.string(),
  expiresAt: z.string(),
  /** `spent`: the step it approved failed (or is retried), so it authorises nothing any more; the step needs a fresh approval. */
  state: z.enum(['pending', 'approved', 'expired', 'stopped', 'spent']),
  by: z.string().optional(),
  at: z.string().optional(),
  /** What the request showed under its question (node, image, etcd, expiry), without its buttons: the decided request keeps it. */
  shown: z.array(z.record(z.string(), z.unknown())).optional(),
  /** When the approvers were reminded that it expires soon; a request is reminded once. */
  remindedAt: z.string().optional(),
  /** `operation`: asked under the cluster's `approvalScope: operation`, so it covers every later step that asks one, until a failure or a Retry. */
  scope: z.enum(['node', 'operation']).optional(),
  /** The nonce of the operation-wide approval that covered this step: no person was asked for this one. */
  coveredBy: z.string().optional(),
  /** Why a person stopped at this request, when they gave a reason. */
  reason: z.string().optional(),
  /** What the approver ticked with Approve, in full (a replacement's apply: the ISO and its sha256), when the step asked. */
  confirmed: z.array(z.string()).optional(),
  /**
   * A step that needs more than one approver (see `Playbook.approvalsNeeded`): the approvals given so
   * far, each by a different person, while the request is still pending. The last one needed decides it.
   */
  given: z.array(z.object({ by: z.string(), at: z.string() })).optional(),
  /** How many distinct approvers the step needs, when more than one: the card and the record say so. */
  needed: z.number().int().min(2).optional(),
});
export type Approval = z.infer<typeof Approval>;

export const AuditEntry = z.object({
  seq: z.number().int(),
  at: z.string(),
  actor: z.string(),
  event: z.string(),
  detail: z.string().optional(),
  /**
   * The reply still to be posted in the thread (`#<seq> …`); dropped once it is there. `broadcast`: the
   * reply also shows in the channel, where Slack notifies the people it mentions, and this entry leads it.
   */
  post: z
    .object({ text: z.string(), blocks: z.array(z.record(z.string(), z.unknown())).optional(), broadcast: z.boolean().optional() })
    .optional(),
  /** The thread reply that carries the entry, once posted. */
  ts: z.string().optional(),
  /** A post went out without an answer (a crash, a 5xx): look in the thread before posting again. */
  attempted: z.boolean().optional(),
  /** Waits for the next entry that is posted, and goes to the thread in the same reply. */
  hold: z.boolean().optional(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;

export const Snapshot = z.object({
  id: z.string(),
  path: z.string(),
  bytes: z.number(),
  sha256: z.string(),
  revision: z.number(),
  /** `total keys` of talosctl's `snapshot info`: etcd read the file back and counted them. */
  totalKeys: z.number().optional(),
  node: z.string(),
  takenAt: z.string(),
});
export type Snapshot = z.infer<typeof Snapshot>;

/** One change of a reviewed plan: its address and action, never its values (they can be sensitive). */
export const PlanChange = z.object({ address: z.string(), action: z.string() });

/**
 * What the bot keeps of a reviewed Terraform plan. The plan file itself holds sensitive values
 * and stays on disk in a private directory; Redis keeps only its hash, to prove at apply time
 * that the file is the one reviewed.
 */
/** One declared version as `src/tofu/declared-versions.ts` reads it. */
const DeclaredVersionSchema = z.union([
  z.object({
    version: z.string(),
    // The output first: an object schema strips the keys it does not know, so `{variable}` alone would drop `output`.
    source: z.union([z.object({ output: z.string(), variable: z.string().optional() }), z.object({ variable: z.string() })]),
  }),
  z.object({ off: z.string() }),
]);

export const TerraformPlan = z.object({
  /** The git commit of the Terraform directory the plan was made from. */
  commit: z.string().optional(),
  /** The working tree had uncommitted changes: the plan may be shown, never applied. */
  dirty: z.boolean(),
  /** sha256 of the saved plan file. */
  planSha256: z.string().optional(),
  /** `2 to add, 1 to change`, or `no changes`. */
  summary: z.string(),
  changes: z.array(PlanChange).default([]),
  /** The changes as the reviewer reads them: grouped by provider (Talos and Proxmox first), most destructive first, dangers marked. */
  listing: z.array(z.string()).default([]),
  /** What applying it does to the nodes, riskiest first ("applies configuration to 3 control planes at once; may reboot them"). */
  effect: z.array(z.string()).optional(),
  /** Hostnames of the VMs the plan creates: nodes to watch join. */
  adds: z.array(z.string()).default([]),
  /**
   * The addresses of the nodes whose VMs the plan replaces or destroys, whose disruption budgets the
   * gates judge: empty when it takes no node away ("no drain judged here"); absent when a VM's node
   * has no known address, and every budget is judged.
   */
  drainNodes: z.array(z.string()).optional(),
  /** `talos_version` as the plan moves it, from `output_changes`. */
  talosVersion: z.object({ from: z.string().optional(), to: z.string() }).optional(),
  /** The Talos and Kubernetes versions the plan declares (or why each could not be read): the Apply checks them against what runs again. */
  declared: z.object({ talos: DeclaredVersionSchema, kubernetes: DeclaredVersionSchema }).optional(),
  /** Per kind, whether the plan changes the version the state declared when it was planned. */
  declaredMoves: z.object({ talos: z.boolean().optional(), kubernetes: z.boolean().optional() }).optional(),
  /**
   * The boot ISO the plan's new or replaced VMs, or its moved `talos_version`, rely on: its Image Factory URL
   * and the full sha256 of the bot's own download, which the approver compares with the uploaded file.
   */
  iso: z
    .object({
      /** Why the plan needs the ISO checked: it moves talos_version, creates or replaces a VM. */
      because: z.string(),
      url: z.string(),
      /** The static Proxmox file ID every node's VM boots. */
      file: z.string(),
      sha256: z.string().optional(),
      bytes: z.number().optional(),
      /** Why there is no sha256. */
      error: z.string().optional(),
    })
    .optional(),
});
export type TerraformPlan = z.infer<typeof TerraformPlan>;

/** The completed upgrades whose declared version a Terraform change brings in line: it is their follow-up. */
export const FollowUpOf = z.array(z.object({ op: z.string(), kind: z.enum(['talos', 'kubernetes']), version: z.string() }));
export type FollowUpOf = z.infer<typeof FollowUpOf>;

/**
 * Fields an earlier version kept at the top of the operation that are now its playbook's own
 * (`data`): a Terraform change's plan and its replan, a rollback's parent.
 */
const MOVED_INTO_DATA = ['terraform', 'replannedAs', 'parent'] as const;

/** An operation as an earlier version stored it, with its playbook's fields moved into `data`; anything else as it is. */
function movedIntoData(stored: unknown): unknown {
  if (typeof stored !== 'object' || stored === null) return stored;
  const record = stored as Record<string, unknown>;
  const moved = MOVED_INTO_DATA.filter((field) => record[field] !== undefined);
  if (moved.length === 0) return stored;
  const rest = Object.fromEntries(Object.entries(record).filter(([field]) => !(MOVED_INTO_DATA as readonly string[]).includes(field)));
  const data = typeof record['data'] === 'object' && record['data'] !== null ? (record['data'] as Record<string, unknown>) : {};
  return { ...rest, data: { ...Object.fromEntries(moved.map((field) => [field, record[field]])), ...data } };
}

/**
 * A Terraform change as an earlier version stored it: its apply step had the id `apply`, which the
 * Kubernetes upgrade's apply also has. It reads with the step's own id, `tofu-apply`, everywhere a
 * step is named (its approvals, the Retry offer, a window wait, a failure).
 */
function renamedTofuApplyStep(stored: unknown): unknown {
  if (typeof stored !== 'object' || stored === null) return stored;
  const record = stored as Record<string, unknown>;
  const steps = Array.isArray(record['steps']) ? (record['steps'] as Record<string, unknown>[]) : [];
  if (record['kind'] !== 'terraform-apply' || !steps.some((s) => s['id'] === 'apply' && s['kind'] === 'tofu-apply')) return stored;
  const renamed = (ref: unknown): unknown => {
    if (typeof ref !== 'object' || ref === null) return ref;
    const r = ref as Record<string, unknown>;
    return r['step'] === 'apply' ? { ...r, step: 'tofu-apply' } : r;
  };
  return {
    ...record,
    steps: steps.map((s) => (s['id'] === 'apply' ? { ...s, id: 'tofu-apply' } : s)),
    ...(Array.isArray(record['approvals']) ? { approvals: (record['approvals'] as unknown[]).map(renamed) } : {}),
    ...Object.fromEntries(['retry', 'windowWait', 'failure'].filter((f) => record[f] !== undefined).map((f) => [f, renamed(record[f])])),
  };
}

/** The operation's fields, without the reading of earlier versions' records (see `Operation`). */
export const OperationFields = z.object({
  id: z.string().regex(/^op-[a-z0-9]+$/),
  /** The operation's kind: the key of its playbook in the registry (e.g. `talos-upgrade`). */
  kind: z.string().regex(KIND_NAME),
  cluster: z.string(),
  channel: z.string(),
  requestedBy: z.string(),
  createdAt: z.string(),
  state: OperationState,
  /** Incremented on every write; the plan's buttons carry it to detect a stale plan. */
  revision: z.number().int(),
  /**
   * Ids of the latest writes: a write whose reply was lost (Redis restarting, the client sending
   * it again on reconnect) finds itself here instead of applying its change twice.
   */
  writes: z.array(z.string()).optional(),
  target: z
    .object({
      version: z.string().optional(),
      fromVersion: z.string().optional(),
      schematic: z.string().optional(),
      /** The node a rollback or removal is about. */
      node: z.string().optional(),
      nodeName: z.string().optional(),
      /**
       * The name the command gave the node and the source that turned it into `node` (the inventory, or
       * the last look at the cluster): the preflight looks again and refuses when the address lost that name.
       */
      namedAs: z.object({ name: z.string(), by: z.enum(['inventory', 'last-look']), seenAt: z.string().optional() }).optional(),
      /** The node's role when planned: a removal or replacement still knows it once the node has left the estate. */
      nodeRole: z.enum(['controlplane', 'worker']).optional(),
      /**
       * A replacement's cluster shape when planned: the control planes observed. On staging it says
       * whether the replacement is the runbook's rehearsal (a control plane of three).
       */
      clusterControlPlanes: z.number().int().nonnegative().optional(),
      /** The Talos version the cluster ran when planned: picks the matching talosctl. */
      talosVersion: z.string().optional(),
    })
    .default({}),
  rootTs: z.string().optional(),
  /** The link to the thread of `rootTs`, asked of Slack once when first needed (see `threadLink`). */
  permalink: z.string().optional(),
  steps: z.array(Step).default([]),
  approvals: z.array(Approval).default([]),
  snapshot: Snapshot.optional(),
  startedBy: z.string().optional(),
  startedAt: z.string().optional(),
  endedAt: z.string().optional(),
  reason: z.string().optional(),
  refusals: z.array(z.string()).default([]),
  cancelRequestedBy: z.string().optional(),
  commit: z.string().optional(),
  validation: z.string().optional(),
  audit: z.array(AuditEntry).default([]),
  /** The Start button's nonce; a click carrying another is from a stale plan. */
  planNonce: z.string().optional(),
  /**
   * Set when a step that asked a node to change failed: the node a Rollback button may roll back. A click
   * requests a rollback operation (`rollbackOp`) that goes through the same preflight and approval as `/talos rollback`.
   */
  failure: z
    .object({
      step: z.string(),
      node: z.string(),
      nonce: z.string(),
      // An operation stored by an earlier version, whose button ran the rollback itself, reads as one whose rollback was requested.
      rollback: z.enum(['offered', 'requested']).catch('requested'),
      rollbackOp: z.string().optional(),
    })
    .optional(),
  /** Set while the operation waits for its maintenance window: the step, the override button's nonce and when the window opens. */
  windowWait: z
    .object({
      step: z.string(),
      nonce: z.string(),
      since: z.string(),
      opensAt: z.string().optional(),
      /** The first approver who asked to start outside the window: the step waits for a second, distinct approver. */
      firstOverride: z.object({ by: z.string(), at: z.string() }).optional(),
    })
    .optional(),
  /** Production only: the completed staging operation to the same version (or of the same Terraform commit) and the link to its thread, or none found. */
  rehearsal: z
    .object({
      stagingOp: z.string().optional(),
      stagingLink: z.string().optional(),
      /** Who applied the same Terraform change in staging, and when it ended with its gate passed. */
      appliedBy: z.string().optional(),
      appliedAt: z.string().optional(),
    })
    .optional(),
  /**
   * Two approvers' explicit word to go ahead without a staging rehearsal: the first to click, then
   * `second`, another approver. Start waits for both.
   */
  override: z.object({ by: z.string(), at: z.string(), second: z.object({ by: z.string(), at: z.string() }).optional() }).optional(),
  /**
   * A Talos or Kubernetes upgrade: the Terraform change that brought the declared version in line
   * afterwards, once one was planned (`planned`) and once it was applied (`applied`), with its commit.
   */
  terraformFollowUp: z
    .object({ op: z.string(), state: z.enum(['planned', 'applied']), commit: z.string().optional(), at: z.string() })
    .optional(),
  /** Review items the starter confirmed with the Start button. */
  confirmedReview: z.array(z.string()).default([]),
  /** Set when a step that is safe to run again failed: the Retry button re-runs it from `step`, once per nonce. */
  retry: z
    .object({
      step: z.string(),
      nonce: z.string(),
      state: z.enum(['offered', 'used']),
      /**
       * `observe`: the retried step keeps what it recorded as issued, and looks at its node before it
       * acts. `reissue` (or none): it starts afresh, as nothing of it is in flight.
       */
      resume: z.enum(['observe', 'reissue']).optional(),
      /** What the Retry does, in words, as the stop showed it. */
      does: z.string().optional(),
      /** Only an approver's explicit word retries, the button saying this (Talos fell back to the previous image on its own). */
      explicit: z.string().optional(),
    })
    .optional(),
  /**
   * The approver who took the operation's approvals ([Take it] on a request): later requests page only them, and
   * the approvers are paged again only when a request nears its expiry. A later taker replaces an earlier one.
   */
  approvalsTaken: z.object({ by: z.string(), at: z.string() }).optional(),
  /** What the preflight found worth showing in the plan, e.g. the quorum arithmetic of a removal. */
  notes: z.array(z.string()).default([]),
  /** What the plan leads with: what the operation does to the cluster while it runs ("⚠ Only control plane: …"). */
  consequences: z.array(z.string()).optional(),
  /** How the bot goes about it (talosctl flags, known issues it works around): for the maintenance record, not the plan. */
  mechanics: z.array(z.string()).optional(),
  /** The playbook's own fields (a Terraform change's plan, a rollback's parent), typed by its `data` schema when it reads them. */
  data: z.record(z.string(), z.unknown()).optional(),
  /** The nonce of a stop's Cancel button: a Cancel from the message of an earlier stop is stale. */
  stopNonce: z.string().optional(),
  /** What the gate before the operation found already unwell: after each node and at the end, only regressions stop. */
  baseline: Baseline.optional(),
  /**
   * What the step in progress waits on, for the root's status board (e.g. `rebooting, waiting for
   * talos-prd-cp-1`, detail `Kubernetes: not Ready`), and since when: set by the step, cleared when it ends.
   */
  phase: z.object({ step: z.string(), text: z.string(), detail: z.string().optional(), since: z.string() }).optional(),
});

/** A stored operation; one an earlier version stored reads with its playbook's fields moved into `data`. */
export const Operation = z.preprocess((stored) => renamedTofuApplyStep(movedIntoData(stored)), OperationFields);
export type Operation = z.infer<typeof OperationFields>;

/** The operation with one step changed. */
export function withStep(op: Operation, stepId: string, patch: Partial<Step>): Operation {
  return { ...op, steps: op.steps.map((s) => (s.id === stepId ? { ...s, ...patch } : s)) };
}

/** A new operation as a request creates it: nothing planned, approved or recorded yet. */
export function newOperation(
  fields: Pick<Operation, 'kind' | 'cluster' | 'channel' | 'requestedBy' | 'createdAt' | 'state'> & Partial<Operation>,
): Operation {
  return {
    id: newOperationId(),
    revision: 0,
    target: {},
    steps: [],
    approvals: [],
    refusals: [],
    audit: [],
    confirmedReview: [],
    notes: [],
    ...fields,
  };
}

/** Short, unguessable, and valid as a BullMQ job id and in Slack button values. */
export function newOperationId(): string {
  return `op-${crypto.randomUUID().replace(/-/g, '').slice(0, 10)}`;
}
