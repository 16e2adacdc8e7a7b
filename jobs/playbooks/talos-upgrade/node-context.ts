import type { ClusterConfig } from '../../../src/config/inventory.ts';
import type { ClusterSession } from '../../../src/cluster/cluster-session.ts';
import type { Logger } from '../../../src/log/logger.ts';
import type { Step } from '../../../src/ops/operation.ts';
import type { Baseline } from '../../../src/health/baseline.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import type { WalkContext } from '../../engine/playbook.ts';

export interface NodeStepContext {
  deps: PlaybookDeps;
  cluster: ClusterConfig;
  session: ClusterSession;
  talosctl: Talosctl;
  step: Step;
  target: string;
  /**
   * The target is the version the node runs: a re-install with the step's image, so a node on
   * that version is skipped only when it also runs the image's schematic. Default false.
   */
  reinstall?: boolean;
  log: Logger;
  signal?: AbortSignal;
  /** Persists that the upgrade was requested, before talosctl is asked: a resumed job then observes instead of asking again. */
  markIssued: (fromVersion: string, bootId: string | undefined) => Promise<void>;
  progress: (detail: string) => Promise<void>;
  /** What the step waits on now, for the root's status board (see `WalkContext.phase`); returns at once. */
  phase?: (text: string, detail?: string) => void;
  /** Tells the bot of the gate after the node (see `WalkContext.gateDone`). */
  gateDone?: WalkContext['gateDone'];
  /** An entry in the operation's thread: what a resumed step observed, and what it will do. */
  record: (event: string, detail: string) => Promise<void>;
  /**
   * Why the step's stored image is not the one the rules derive now (empty when it is): asked
   * right before every `talosctl upgrade` is sent, a first request, a re-send or a re-issue.
   */
  imageProblems: () => Promise<string[]>;
  /** This run follows a Retry of this step: what the node shows is recorded even when nothing was issued. */
  retried?: boolean;
  /** What was already unwell before the operation: the gate after the node stops only on regressions. None: every failure stops. */
  baseline?: Baseline;
  /** The Kubernetes names of the nodes this operation has changed so far (requested or upgraded), this step's included once requested. */
  changedNodes?: readonly string[];
}
