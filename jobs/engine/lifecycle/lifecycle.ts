import type { Operation } from '../../../src/ops/operation.ts';
import { systemClock } from '../../../src/time/clock.ts';
import { decideApproval, rerequestApproval } from '../approvals/decide.ts';
import { takeApprovals } from '../approvals/take.ts';
import { cancel, cancelPlan } from './cancel.ts';
import { refused, type LifecycleDeps, type LifecyclePolicy, type MoveDeps, type MoveResult } from './deps.ts';
import { redisLostRefusal } from '../../../src/chat/redis-lost.ts';
import { RedisEpochLostError } from '../../../src/ops/cluster-lock.ts';
import { planAgain, requestRollback, retry, overrideWindow } from './recover.ts';
import { request } from './request.ts';
import { stopAfterStep } from './stop-after.ts';
import { overrideRehearsal, start, type OperationClick } from './start.ts';
import { signOffGate, signOffRefusal, type SignOffClick, type SignOffResult } from './sign-off.ts';
import type { GateSignOffStore } from '../../../src/ops/gate-signoffs.ts';

/** Sign-offs are not kept where no store was given: every one is refused, and nothing is written. */
const NO_SIGN_OFFS: GateSignOffStore = {
  saveReport: () => Promise.resolve(),
  latestReport: () => Promise.resolve(undefined),
  list: () => Promise.resolve({ given: [], unreadable: [] }),
  record: () => Promise.resolve(false),
  raw: () => Promise.resolve(undefined),
};

/**
 * The one place that moves an operation between states on a person's word. Each move is a
 * compare-and-set with its audit entry, then its queued job, the lock, and the message edits
 * that follow. The engine's own moves (a step's end, a stop, an expiry) stay in its jobs; the
 * store refuses any move the state machine does not allow, whoever makes it.
 */
export interface Lifecycle {
  /** What the operation's kind decides (who starts it, whether windows hold it): for the handlers' authorization too. */
  readonly policy: LifecyclePolicy;
  /** A command's new operation stored and its first job queued. */
  request(op: Operation): Promise<void>;
  /** A plan's Start, or a Terraform change's Apply. */
  start(click: OperationClick): Promise<MoveResult>;
  /** An approval request answered: Approve or Stop (a Kubernetes upgrade's Apply or Cancel); a stop may carry the person's reason. */
  decide(click: OperationClick, decision: 'approved' | 'stopped', reason?: string): Promise<MoveResult>;
  /** An approver's [Take it] on a request: later requests of the operation page only them. */
  takeApprovals(click: OperationClick): Promise<MoveResult>;
  /** A paused operation whose request expired asks for approval again. */
  rerequestApproval(click: OperationClick): Promise<MoveResult>;
  retry(click: OperationClick): Promise<MoveResult>;
  overrideWindow(click: OperationClick): Promise<MoveResult>;
  overrideRehearsal(click: OperationClick): Promise<MoveResult>;
  requestRollback(click: OperationClick): Promise<MoveResult>;
  planAgain(click: OperationClick): Promise<MoveResult>;
  /** `/talos cancel`: ends a waiting operation now, or asks a running one to stop between steps. */
  cancel(opId: string, by: string): Promise<MoveResult>;
  /** A plan's Cancel button: the same cancel, while the plan it came with is still offered. */
  cancelPlan(click: OperationClick): Promise<MoveResult>;
  /** The status board's Stop after this node: a running operation stops once its current step ends. */
  stopAfterStep(click: OperationClick): Promise<MoveResult>;
  /** Why a [Sign off] click can no longer sign (a newer report, a gate signed off already); undefined when it can. */
  signOffRefusal(click: SignOffClick): Promise<SignOffResult | undefined>;
  /** An approver's sign-off of a by-hand gate, with its evidence, recorded for the shape of the report it came with. */
  signOff(click: SignOffClick, evidence: string | undefined): Promise<SignOffResult>;
}

export function createLifecycle(options: LifecycleDeps): Lifecycle {
  const deps: MoveDeps = {
    ...options,
    clock: options.clock ?? systemClock,
    redisLost: options.redisLost ?? (() => undefined),
    startRecheck: options.startRecheck ?? (() => Promise.resolve([])),
    signOffs: options.signOffs ?? NO_SIGN_OFFS,
    signOffMaxAgeMs: options.signOffMaxAgeMs ?? 90 * 86_400_000,
  };
  // Once Redis lost the bot's data, what it holds is no record to move: every move is refused, whatever the click.
  const whole =
    <A extends unknown[]>(move: (...args: A) => Promise<MoveResult>) =>
    (...args: A): Promise<MoveResult> => {
      const lost = deps.redisLost();
      return lost === undefined ? move(...args) : Promise.resolve(refused('redis-lost', redisLostRefusal(lost)));
    };
  return {
    policy: deps.policy,
    request: (op) => {
      const lost = deps.redisLost();
      return lost === undefined ? request(deps, op) : Promise.reject(new RedisEpochLostError());
    },
    start: whole((click) => start(deps, click)),
    decide: whole((click, decision, reason) => decideApproval(deps, click, decision, reason)),
    takeApprovals: whole((click) => takeApprovals(deps, click)),
    rerequestApproval: whole((click) => rerequestApproval(deps, click)),
    retry: whole((click) => retry(deps, click)),
    overrideWindow: whole((click) => overrideWindow(deps, click)),
    overrideRehearsal: whole((click) => overrideRehearsal(deps, click)),
    requestRollback: whole((click) => requestRollback(deps, click)),
    planAgain: whole((click) => planAgain(deps, click)),
    cancel: whole((opId, by) => cancel(deps, opId, by)),
    cancelPlan: whole((click) => cancelPlan(deps, click)),
    stopAfterStep: whole((click) => stopAfterStep(deps, click)),
    signOffRefusal: (click) => signOffRefusal(deps, click),
    signOff: (click, evidence) => {
      const lost = deps.redisLost();
      return lost === undefined
        ? signOffGate(deps, click, evidence)
        : Promise.resolve<SignOffResult>({ ok: false, code: 'redis-lost', message: redisLostRefusal(lost) });
    },
  };
}
