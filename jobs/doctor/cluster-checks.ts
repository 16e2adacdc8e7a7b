import type { DoctorFinding } from '../../src/chat/doctor-report.ts';
import type { ClusterConfig } from '../../src/config/inventory.ts';
import { DEFAULT_OUTPUT_NAMES, terraformOutputs, type OutputRole } from '../../src/cluster/terraform-outputs.ts';
import { OpsError } from '../../src/errors.ts';
import type { DoctorDeps } from './doctor.ts';
import { declaredInState, KIND_WORDS, RUNBOOK_NAMES, sourceWords, VERSION_KINDS } from '../../src/tofu/declared-versions.ts';

/** The outputs the bot cannot work without; the Longhorn installer only serves clusters with that node class. */
const REQUIRED_ROLES: readonly OutputRole[] = ['talosconfig', 'kubeconfig', 'schematicId'];

/**
 * Every `tofu output` the bot reads, by name: present or not. The values are read (that is the only
 * way tofu tells) but never leave this function: each sensitive one is registered with the
 * scrubber as it is read, and the finding names outputs only.
 */
export async function outputsCheck(
  deps: Pick<DoctorDeps, 'tofu' | 'scrubber'>,
  cluster: ClusterConfig,
  signal: AbortSignal,
): Promise<DoctorFinding[]> {
  const outputs = terraformOutputs(deps, cluster);
  const base = { check: 'Terraform outputs', cluster: cluster.name };
  const missing: string[] = [];
  for (const role of REQUIRED_ROLES) {
    if ((await outputs.optional(role, signal)) === undefined) missing.push(`"${outputs.name(role)}" (${role})`);
  }
  const longhorn = (await outputs.optional('longhornInstaller', signal)) !== undefined;
  const optionalNote = longhorn ? '' : `; the optional "${outputs.name('longhornInstaller')}" is not declared`;
  if (missing.length === 0) {
    return [
      {
        ...base,
        status: 'ok',
        found: `${REQUIRED_ROLES.map((r) => `"${outputs.name(r)}"`).join(', ')} present in ${cluster.terraformDir}${optionalNote}`,
      },
    ];
  }
  const renamed = missing.length === 1 ? 'its name' : 'their names';
  return [
    {
      ...base,
      status: 'fail',
      found: `${cluster.terraformDir} has no output ${missing.join(', ')}`,
      fix: `declare ${missing.length === 1 ? 'it' : 'them'} and run \`tofu apply\`, or set \`terraformOutputs\` in the inventory to ${renamed} in this configuration (defaults: ${Object.values(DEFAULT_OUTPUT_NAMES).join(', ')})`,
    },
  ];
}

/**
 * The declared Talos and Kubernetes versions, from the outputs the inventory names (default the runbook's):
 * each one read arms "apply only after every node runs the declared version", the refusal of a plan below
 * what runs, and the gate's drift check. One the bot cannot read turns them off, and the doctor says so.
 */
export async function declaredVersionsCheck(
  deps: Pick<DoctorDeps, 'tofu' | 'scrubber'>,
  cluster: ClusterConfig,
  signal: AbortSignal,
): Promise<DoctorFinding[]> {
  const declared = await declaredInState(terraformOutputs(deps, cluster), signal);
  return VERSION_KINDS.map((kind): DoctorFinding => {
    const d = declared[kind];
    const base = { check: 'Declared versions', cluster: cluster.name };
    const what = KIND_WORDS[kind];
    if ('version' in d)
      return {
        ...base,
        status: 'ok',
        found: `Terraform declares ${what} ${d.version} (${sourceWords(d.source)}): plans below what runs are refused, and the gate reports drift`,
      };
    return {
      ...base,
      status: 'warn',
      found: `the rule "apply only after every node runs the declared ${what} version" is off, and ${what} drift is not reported: ${d.off}`,
      fix: `declare \`output "${RUNBOOK_NAMES[kind]}" { value = var.${RUNBOOK_NAMES[kind]} }\` and run \`tofu apply\`, or set \`declaredVersions.${kind}\` in the inventory to the output that carries it`,
    };
  });
}

/** The Talos versions the cluster's nodes report through Kubernetes (`Talos (v1.13.9)`), every one of them. */
function nodeVersions(nodes: readonly { status?: { nodeInfo?: { osImage?: string } } }[]): string[] {
  const versions = nodes.map((n) => /\((v\d+\.\d+\.\d+)\)/.exec(n.status?.nodeInfo?.osImage ?? '')?.[1]).filter((v) => v !== undefined);
  return [...new Set(versions)].sort();
}

/** A talosctl of exactly each version the cluster runs: in the image, in the download cache, or to be downloaded at the next plan. */
export async function talosctlCheck(
  deps: Pick<DoctorDeps, 'access' | 'binaries' | 'downloader'>,
  cluster: ClusterConfig,
  signal: AbortSignal,
): Promise<DoctorFinding[]> {
  const base = { check: 'talosctl', cluster: cluster.name };
  const versions = await deps.access.withSession(cluster, signal, async (session) => nodeVersions(await session.kube.listNodes(signal)));
  if (versions.length === 0) {
    return [
      {
        ...base,
        status: 'warn',
        found: 'no node reports its Talos version through Kubernetes, so the matching client cannot be named',
        fix: 'run `/talos health` to see why the nodes do not answer',
      },
    ];
  }
  return Promise.all(
    versions.map(async (version): Promise<DoctorFinding> => {
      const local = await deps.binaries.forVersion(version).catch(() => undefined);
      if (local !== undefined && local.version === version)
        return { ...base, status: 'ok', found: `talosctl ${version} is in the image, for the ${version} the cluster runs` };
      if (deps.downloader !== undefined) {
        let cached: string | undefined;
        try {
          cached = await deps.downloader.cached(version);
        } catch (error) {
          // A binary changed after its download (deleted by now), or a cache directory that is not the bot's own.
          return {
            ...base,
            status: 'fail',
            found: error instanceof OpsError ? error.message : String(error),
            fix: error instanceof OpsError && error.hint !== undefined ? error.hint : 'check TALOSCTL_CACHE_DIR',
          };
        }
        if (cached !== undefined)
          return { ...base, status: 'ok', found: `talosctl ${version} is in the download cache, for the ${version} the cluster runs` };
        return {
          ...base,
          status: 'ok',
          found: `talosctl ${version} is not cached yet; the next plan downloads it from the release and checks it (TALOSCTL_DOWNLOAD=false turns that off)`,
        };
      }
      if (local !== undefined) {
        // One binary named by TALOSCTL_BIN says no version by its name; the preflight asks it (`talosctl version --client`).
        return {
          ...base,
          status: 'warn',
          found: `the cluster runs ${version}, and TALOSCTL_BIN is one binary whose version only an operation's preflight checks`,
          fix: `make TALOSCTL_BIN a directory holding talosctl-${version}, or leave TALOSCTL_DOWNLOAD unset so the bot downloads it`,
        };
      }
      return {
        ...base,
        status: 'fail',
        found: `the cluster runs ${version}, and TALOSCTL_BIN has no talosctl-${version}: an upgrade, rollback or removal is refused`,
        fix: `put talosctl-${version} in the TALOSCTL_BIN directory, or leave TALOSCTL_DOWNLOAD unset so the bot downloads it`,
      };
    }),
  );
}
