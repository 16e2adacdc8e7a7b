import { ParseError, splitLines } from './parse-error.ts';
import { parseGoQuotedList, readGoQuoted } from './parse-go-quoted.ts';

const SOURCE = 'talosctl upgrade-k8s';

/** A row of the `RESOURCE  COUNT` table printed under the deprecation warning. */
export interface DeprecatedResource {
  /** e.g. `customresourcedefinitions.v1beta1.apiextensions.k8s.io`. */
  resource: string;
  count: number;
}

/** A row of the `REMOVED RESOURCE  COUNT` table: objects stored in an API version the target removes. */
export interface RemovedResource {
  /** e.g. `podschedulingcontexts.v1alpha3.resource.k8s.io`. */
  resource: string;
  count: number;
}

/** A row of a `NODE  COMPONENT  REMOVED FLAG` (or `REMOVED FEATURE GATE`, `REMOVED ADMISSION PLUGIN`) table. */
export interface RemovedItem {
  node: string;
  /** e.g. `kube-apiserver`, `kubelet`. */
  component: string;
  kind: 'flag' | 'feature gate' | 'admission plugin';
  /** The flag, feature gate or plugin name, e.g. `cloud-config`. */
  name: string;
}

/** One `updating "<component>" to version "<v>"` section. */
export interface ComponentUpdate {
  /** e.g. `kube-apiserver`, `kube-proxy`, `kubelet`. */
  name: string;
  toVersion: string;
  /** Nodes where the update started (`> "<node>": starting update`), in order. */
  nodes: string[];
  /** Nodes reported `< "<node>": successfully updated`. */
  updated: string[];
  /** Distinct versions updated from (`> update kube-apiserver: v1.33.4 -> 1.34.0`). */
  fromVersions: string[];
}

/** What `talosctl upgrade-k8s [--dry-run]` printed. */
export interface UpgradeK8sReport {
  /** `automatically detected the lowest Kubernetes version 1.33.4`. */
  fromVersion?: string;
  /** The target: from the first component section, else the deprecation check or warning. */
  toVersion?: string;
  controlPlanes: string[];
  workers: string[];
  /** `WARNING: …` lines, e.g. resources going to be deprecated/migrated in the target version. */
  deprecationWarnings: string[];
  deprecatedResources: DeprecatedResource[];
  components: ComponentUpdate[];
  /**
   * What the pre-upgrade checks found (siderolabs/go-kubernetes upgrade/checks.go): objects of removed
   * API versions and removed flags. Any of them makes upgrade-k8s fail, `--dry-run` included.
   */
  removed: { resources: RemovedResource[]; items: RemovedItem[] };
  /** Whether talosctl reported changes skipped in dry-run. */
  dryRun: boolean;
  /** Error lines: stderr (the command's error) and error lines on stdout. */
  errors: string[];
}

const DETECTED = /^automatically detected the lowest Kubernetes version (\S+)$/;
const CONTROL_PLANES = /^discovered (?:controlplane|master) nodes (\[.*\])$/;
const WORKERS = /^discovered worker nodes (\[.*\])$/;
const DEPRECATION = /^WARNING: found resources which are going to be deprecated\/migrated in the version (\S+)$/;
const DEPRECATION_CHECK = /^checking for resource APIs to be deprecated in version (\S+)$/;
const RESOURCE_ROW = /^(\S+) {2,}([0-9]+)$/;
const UPDATING = /^updating "?([\w.-]+)"? to version "([^"]+)"$/;
const UPDATE_FROM = /^ > update ([\w.-]+): (\S+) -> (\S+)$/;
const STDOUT_ERROR = /^(?:unsupported upgrade path |compatibility check failed|failed |error[: ])/;
/** Other lines upgrade-k8s prints: checks, waits, per-node and per-manifest steps. */
const OTHER_PROGRESS = /^(?:checking |waiting |updating | [<>] )/;
const DRY_RUN = /(?:skipped in dry-run|dry run, change skipped|apply skipped in dry run|^updating manifests \(dry run\))$/;
/** The headers of `ComponentRemovedItemsError` (go-kubernetes upgrade/checks.go): one tabwriter, cells 3 spaces apart. */
const REMOVED_RESOURCE_HEADER = /^REMOVED RESOURCE {2,}COUNT\s*$/;
const REMOVED_ITEM_HEADER = /^NODE {2,}COMPONENT {2,}REMOVED (FLAG|FEATURE GATE|ADMISSION PLUGIN)\s*$/;

/** `" > "<node>": <msg>` or ` < "<node>": <msg>`. */
function nodeStep(line: string): { arrow: '>' | '<'; node: string; message: string } | undefined {
  const arrow = line.startsWith(' > ') ? '>' : line.startsWith(' < ') ? '<' : undefined;
  if (arrow === undefined) return undefined;
  const quoted = readGoQuoted(line, 3);
  if (quoted === undefined || !line.startsWith(': ', quoted.end)) return undefined;
  return { arrow, node: quoted.value, message: line.slice(quoted.end + 2) };
}

/**
 * stderr holds the command's error (and maybe usage, which is not an error line). The removed-items
 * error is its tables alone, each headed by a blank line: their rows are findings, not error lines.
 */
function stderrErrors(stderr: string, removed: UpgradeK8sReport['removed']): string[] {
  const errors: string[] = [];
  let table: 'resources' | RemovedItem['kind'] | undefined;
  for (const line of splitLines(stderr)) {
    if (line.startsWith('Usage:')) break;
    if (line.trim() === '') {
      table = undefined;
      continue;
    }
    if (REMOVED_RESOURCE_HEADER.test(line)) {
      table = 'resources';
      continue;
    }
    const itemHeader = REMOVED_ITEM_HEADER.exec(line);
    if (itemHeader !== null) {
      table = (itemHeader[1] ?? 'FLAG').toLowerCase() as RemovedItem['kind'];
      continue;
    }
    const cells = line.trim().split(/ {2,}/);
    if (table === 'resources' && cells.length === 2 && /^[0-9]+$/.test(cells[1] ?? '')) {
      removed.resources.push({ resource: cells[0] ?? '', count: Number(cells[1]) });
      continue;
    }
    if (table !== undefined && table !== 'resources' && cells.length === 3) {
      removed.items.push({ node: cells[0] ?? '', component: cells[1] ?? '', kind: table, name: cells[2] ?? '' });
      continue;
    }
    table = undefined;
    if (line.startsWith('WARNING:')) continue;
    errors.push(line.trim());
  }
  return errors;
}

/**
 * Parses `talosctl upgrade-k8s` output (progress goes to stdout, the final error to stderr):
 * enough to summarise a dry run, spot the deprecated-API warning and its `RESOURCE  COUNT` table,
 * and report errors such as `unsupported upgrade path 1.32->1.34 (…)`. Lines it does not know are
 * skipped: the manifest lines vary between releases.
 *
 * @param stderr the command's stderr, where talosctl prints its final error
 * @throws {ParseError} when neither stream holds anything upgrade-k8s prints
 */
export function parseUpgradeK8sOutput(stdout: string, stderr = ''): UpgradeK8sReport {
  const report: UpgradeK8sReport = {
    controlPlanes: [],
    workers: [],
    deprecationWarnings: [],
    deprecatedResources: [],
    components: [],
    removed: { resources: [], items: [] },
    dryRun: false,
    errors: [],
  };
  let recognised = false;
  let inResourceTable = false;
  let component: ComponentUpdate | undefined;
  let checkedVersion: string | undefined;
  let warnedVersion: string | undefined;

  for (const line of splitLines(stdout)) {
    if (line.trim() === '') continue;
    if (inResourceTable) {
      const row = RESOURCE_ROW.exec(line.trim());
      if (line.trim().startsWith('RESOURCE ') && line.trim().endsWith('COUNT')) continue;
      if (row !== null) {
        report.deprecatedResources.push({ resource: row[1] ?? '', count: Number(row[2]) });
        continue;
      }
      inResourceTable = false;
    }
    let match: RegExpExecArray | null;
    if ((match = DETECTED.exec(line)) !== null) {
      report.fromVersion = match[1];
    } else if ((match = CONTROL_PLANES.exec(line)) !== null) {
      report.controlPlanes = parseGoQuotedList(match[1] ?? '') ?? [];
    } else if ((match = WORKERS.exec(line)) !== null) {
      report.workers = parseGoQuotedList(match[1] ?? '') ?? [];
    } else if ((match = DEPRECATION.exec(line)) !== null) {
      report.deprecationWarnings.push(line);
      warnedVersion ??= match[1];
      inResourceTable = true;
    } else if (line.startsWith('WARNING:')) {
      report.deprecationWarnings.push(line);
    } else if ((match = DEPRECATION_CHECK.exec(line)) !== null) {
      checkedVersion ??= match[1];
    } else if ((match = UPDATING.exec(line)) !== null) {
      component = { name: match[1] ?? '', toVersion: match[2] ?? '', nodes: [], updated: [], fromVersions: [] };
      report.components.push(component);
      report.toVersion ??= component.toVersion;
    } else if (line === 'updating manifests' || line === 'updating manifests (dry run)') {
      component = undefined;
    } else if ((match = UPDATE_FROM.exec(line)) !== null) {
      const from = match[2] ?? '';
      if (component !== undefined && !component.fromVersions.includes(from)) component.fromVersions.push(from);
    } else if (STDOUT_ERROR.test(line)) {
      report.errors.push(line.trim());
    } else {
      const step = nodeStep(line);
      if (step !== undefined && component !== undefined) {
        if (step.arrow === '>' && step.message === 'starting update') component.nodes.push(step.node);
        if (step.arrow === '<' && step.message === 'successfully updated') component.updated.push(step.node);
      } else if (!OTHER_PROGRESS.test(line)) {
        continue;
      }
    }
    recognised = true;
    if (DRY_RUN.test(line)) report.dryRun = true;
  }
  const target = report.toVersion ?? checkedVersion ?? warnedVersion;
  if (target !== undefined) report.toVersion = target;
  report.errors.push(...stderrErrors(stderr, report.removed));
  if (!recognised && report.errors.length === 0 && report.removed.resources.length === 0 && report.removed.items.length === 0) {
    throw new ParseError(SOURCE, 'neither stdout nor stderr holds any upgrade-k8s output', stdout.trim() || stderr.trim());
  }
  return report;
}
