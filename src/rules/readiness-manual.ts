import { plainTime } from '../time/plain-time.ts';
import type { Observed, ReadinessGate } from './gate-result.ts';

/** What the rehearsal gate reads of an operation from the bot's store. */
export interface RehearsalRecord {
  id: string;
  /** e.g. `talos-upgrade`, `k8s-upgrade`, `snapshot`. */
  kind: string;
  state: string;
  createdAt: string;
  endedAt?: string;
  /** A replacement's node role and the control planes its cluster had when it was planned. */
  target?: { nodeRole?: string; clusterControlPlanes?: number };
}

/** The bot's own records of the staging cluster, where the runbook's rehearsals happen. */
export interface StagingRecords {
  cluster: string;
  /** Control-plane addresses its inventory entry lists; undefined where it lists none (the bot finds them at run time). */
  controlPlanes: number | undefined;
  /** Its operations, newest first. */
  operations: Observed<RehearsalRecord[]>;
}

interface Rehearsal {
  name: string;
  /** The operation kind that, completed on staging, is this rehearsal. */
  kind?: string;
  /** The operation kind that is only the first half of this rehearsal (a snapshot before a restore). */
  prerequisite?: { kind: string; what: string };
}

/** The runbook's staging rehearsals, in its order. */
const REHEARSALS: Rehearsal[] = [
  { name: 'Talos upgrade', kind: 'talos-upgrade' },
  { name: 'Kubernetes upgrade', kind: 'k8s-upgrade' },
  { name: 'node replacement', kind: 'node-replace' },
  { name: 'etcd restore', kind: 'etcd-restore', prerequisite: { kind: 'snapshot', what: 'etcd snapshot' } },
  { name: 'OpenBao restore' },
  { name: 'Longhorn restore' },
  { name: 'CloudNativePG point-in-time recovery' },
  { name: 'representative workload restore' },
];

/** Plain UTC, not a date token: a gate's evidence is shown in a code block, where Slack does not render tokens. */
function when(record: RehearsalRecord): string {
  return plainTime(record.endedAt ?? record.createdAt);
}

/** A rehearsal the records show only the first half of: its prerequisite, and what is left to check by hand. */
function prerequisiteLine(
  rehearsal: Rehearsal,
  prerequisite: NonNullable<Rehearsal['prerequisite']>,
  records: RehearsalRecord[],
  cluster: string,
): string {
  const record = latestCompleted(records, prerequisite.kind);
  const rehearse = rehearsal.kind === undefined ? '' : `; or let the bot rehearse it: /talos rehearse ${rehearsal.kind} ${cluster}`;
  if (record === undefined)
    return `☐ ${rehearsal.name}: check by hand (no completed ${prerequisite.what} on ${cluster} in the bot's records)${rehearse}`;
  return `◐ ${rehearsal.name}: ${prerequisite.what} ${record.id} completed ${when(record)}; the restore itself: check by hand${rehearse}`;
}

function latestCompleted(records: RehearsalRecord[], kind: string): RehearsalRecord | undefined {
  return records.find((r) => r.kind === kind && r.state === 'completed');
}

/** The runbook rehearses a rolling replacement: a control plane, with two others keeping etcd's quorum. */
const REHEARSAL_CONTROL_PLANES = 3;

/** Why a completed replacement is not the runbook's rehearsal, or undefined when it is. */
function notTheReplacementRehearsal(record: RehearsalRecord): string | undefined {
  const role = record.target?.nodeRole;
  const shape = record.target?.clusterControlPlanes;
  if (role !== 'controlplane') return role === 'worker' ? 'it replaced a worker' : 'its record does not say which role the node had';
  if (shape === undefined) return 'its record does not say how many control planes the staging had then';
  if (shape < REHEARSAL_CONTROL_PLANES) return `the staging had ${shape === 1 ? 'one control plane' : `${shape} control planes`} then`;
  return undefined;
}

/** The latest completed node replacement of a control plane on a staging of three control planes, and the last one that was not. */
function replacementRehearsal(records: RehearsalRecord[]): { counted?: RehearsalRecord; other?: { record: RehearsalRecord; why: string } } {
  const replacements = records.filter((r) => r.kind === 'node-replace' && r.state === 'completed');
  const counted = replacements.find((r) => notTheReplacementRehearsal(r) === undefined);
  const latest = replacements[0];
  const why = latest === undefined ? undefined : notTheReplacementRehearsal(latest);
  return { ...(counted ? { counted } : {}), ...(latest !== undefined && why !== undefined ? { other: { record: latest, why } } : {}) };
}

/**
 * The rehearsals the runbook requires on staging before production. The bot ticks off those its
 * own records show as completed on staging; the rest, and the restores, stay with a person, so the
 * gate is always checked by hand.
 */
export function rehearsalGate(staging: StagingRecords | undefined): ReadinessGate {
  const id = 'staging-rehearsals';
  const title = 'Staging rehearsals';
  const total = REHEARSALS.length;
  if (staging === undefined) {
    return {
      id,
      title,
      status: 'manual',
      summary: `the inventory has no staging cluster (environment: staging), so the bot has no rehearsal records: confirm all ${total} rehearsals by hand`,
      evidence: REHEARSALS.map((r) => `☐ ${r.name}`),
    };
  }
  if (!staging.operations.ok) {
    return {
      id,
      title,
      status: 'manual',
      summary: `could not read the bot's records of ${staging.cluster} (${staging.operations.error}): confirm all ${total} rehearsals by hand`,
      evidence: REHEARSALS.map((r) => `☐ ${r.name}`),
    };
  }
  const records = staging.operations.value;
  const done: string[] = [];
  const evidence = REHEARSALS.map((rehearsal) => {
    if (rehearsal.kind === 'node-replace') {
      const { counted, other } = replacementRehearsal(records);
      if (counted !== undefined) {
        done.push(rehearsal.name);
        return `☑ ${rehearsal.name}: ${counted.id} replaced a control plane of ${counted.target?.clusterControlPlanes} and completed ${when(counted)}`;
      }
      const expand =
        staging.controlPlanes !== undefined && staging.controlPlanes < REHEARSAL_CONTROL_PLANES
          ? ` ${staging.cluster} has ${staging.controlPlanes === 1 ? 'one control plane' : `${staging.controlPlanes} control planes`}: expand it to three first, since replacing a single control plane is etcd disaster recovery, not a rolling replacement`
          : '';
      const seen =
        other === undefined
          ? `no completed node-replace on ${staging.cluster} in the bot's records`
          : `${other.record.id} completed ${when(other.record)} but does not count: ${other.why}`;
      return `☐ ${rehearsal.name}: ${seen}. The runbook's rehearsal replaces a control plane on a staging of three control planes.${expand}`;
    }
    if (rehearsal.kind !== undefined) {
      const record = latestCompleted(records, rehearsal.kind);
      // A rehearsal the bot can run but has not yet: its prerequisite, as before the bot could, says how far staging got.
      if (record === undefined && rehearsal.prerequisite !== undefined)
        return prerequisiteLine(rehearsal, rehearsal.prerequisite, records, staging.cluster);
      if (record === undefined) return `☐ ${rehearsal.name}: no completed ${rehearsal.kind} on ${staging.cluster} in the bot's records`;
      done.push(rehearsal.name);
      return `☑ ${rehearsal.name}: ${record.id} completed ${when(record)}`;
    }
    if (rehearsal.prerequisite !== undefined) return prerequisiteLine(rehearsal, rehearsal.prerequisite, records, staging.cluster);
    return `☐ ${rehearsal.name}: check by hand`;
  });
  const summary =
    done.length === 0
      ? `the bot's records of ${staging.cluster} show none of the ${total} rehearsals: confirm each by hand`
      : `the bot's records of ${staging.cluster} show ${done.length} of ${total} (${done.join(', ')}): confirm the rest by hand`;
  return { id, title, status: 'manual', summary, evidence };
}

function manual(id: string, title: string, summary: string): ReadinessGate {
  return { id, title, status: 'manual', summary, evidence: [] };
}

/** The runbook's gates that neither talosctl nor the Kubernetes API can show the bot. */
export function manualGates() {
  return {
    fluxBootstrap: manual(
      'flux-bootstrap',
      'Production inventory, Flux instance and bootstrap inputs',
      'a production inventory, Flux instance, deploy key and cluster path exist, with bootstrap inputs for the Flux Git source, revision and path, and one that starts the cluster with the applications suspended',
    ),
    outOfCluster: manual(
      'out-of-cluster-dependencies',
      'Recovery systems reachable without Kubernetes',
      'Bitwarden, the Terraform state backend, B2, TrueNAS, and the credentials needed to reach them stay available when Kubernetes is down',
    ),
  };
}
