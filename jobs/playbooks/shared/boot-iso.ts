import type { ClusterConfig } from '../../../src/config/inventory.ts';
import type { TerraformPlan } from '../../../src/ops/operation.ts';
import { withV } from '../../../src/rules/versions.ts';
import type { PlanReview } from '../../../src/tofu/parse-plan.ts';
import { vmKeys } from '../../../src/tofu/parse-plan.ts';
import type { ImageFactory } from '../../../src/talos/image-factory.ts';
import type { TerraformOutputs } from '../../../src/cluster/terraform-outputs.ts';
import { errorText } from '../../../src/chat/error-text.ts';
import { ISO_FILE } from './new-node-image.ts';

export type PlanIso = NonNullable<TerraformPlan['iso']>;

/** The ISO's architecture: the runbook uploads one file, `talos-nocloud-amd64.iso`, for every node. */
const ISO_ARCH = 'amd64';

/** The value of the approver's tick: bound to the hash it confirms, so a tick never carries over to another ISO. */
export function isoTickValue(sha256: string): string {
  return `iso-sha256:${sha256}`;
}

/** What the approver ticks before Apply (a Block Kit option's text: at most 75 characters). */
export const ISO_TICK_TEXT = `the ISO at ${ISO_FILE} matches this sha256`;

/** Why a plan relies on the boot ISO: it moves talos_version, or boots a VM (created or replaced); none: it does not. */
export function isoReasons(review: PlanReview, talosMoves: boolean): string[] {
  const reasons: string[] = [];
  if (talosMoves) reasons.push('it moves talos_version');
  const created = vmKeys(review, 'create');
  if (created.length > 0) reasons.push(`it creates the VM of ${created.join(', ')}`);
  const replaced = [...vmKeys(review, 'replace'), ...vmKeys(review, 'forget-replace')];
  if (replaced.length > 0) reasons.push(`it replaces the VM of ${replaced.join(', ')}`);
  return reasons;
}

/**
 * The runbook's "Download the matching ISO from Image Factory. Verify its checksum.": the ISO of the
 * declared schematic and Talos version at `<factory>/image/<schematic>/<version>/<platform>-amd64.iso`
 * (siderolabs/image-factory v1.5.0: internal/frontend/http/http.go routes `GET /image/:schematic/:version/:path`,
 * internal/profile/profile.go parses a path `<platform>-<arch>.iso` as an ISO),
 * downloaded by the bot and hashed as it streams, so the approver compares a full sha256 with the file at
 * {@link ISO_FILE}. Undefined when the plan relies on no ISO.
 */
export async function planIso(
  input: {
    factory: ImageFactory;
    outputs: TerraformOutputs;
    cluster: ClusterConfig;
    review: PlanReview;
    talosVersion?: string;
    talosMoves: boolean;
  },
  signal?: AbortSignal,
): Promise<PlanIso | undefined> {
  const reasons = isoReasons(input.review, input.talosMoves);
  if (reasons.length === 0) return undefined;
  const because = reasons.join('; ');
  const platform = input.cluster.installerPlatform;
  if (input.talosVersion === undefined)
    return {
      because,
      file: ISO_FILE,
      url: `(unknown: the plan's talos_version could not be read)`,
      error: 'the declared Talos version is unknown',
    };
  let schematic: string;
  try {
    schematic = (await input.outputs.required('schematicId', signal)).trim();
  } catch (error) {
    const url = input.factory.isoUrl({ schematic: '<schematic>', version: withV(input.talosVersion), platform, arch: ISO_ARCH });
    return { because, file: ISO_FILE, url, error: `the declared schematic could not be read (${errorText(error)})` };
  }
  const url = input.factory.isoUrl({ schematic, version: withV(input.talosVersion), platform, arch: ISO_ARCH });
  const checksum = await input.factory.isoSha256(url, signal);
  return checksum.ok
    ? { because, file: ISO_FILE, url, sha256: checksum.sha256, bytes: checksum.bytes }
    : { because, file: ISO_FILE, url, error: checksum.reason };
}

/** The refusal of a plan whose ISO has no sha256: the approver would have nothing to compare the uploaded file with. */
export function isoRefusal(iso: PlanIso | undefined): string | undefined {
  if (iso === undefined || iso.sha256 !== undefined) return undefined;
  return `the plan relies on the boot ISO (${iso.because}), but the bot could not compute its sha256 from ${iso.url}: ${iso.error ?? 'no answer'}. Without it nobody can check the file at ${ISO_FILE}; check IMAGE_FACTORY_URL and the network path to it, then plan again`;
}
