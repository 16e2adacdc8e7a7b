import { isIP } from 'node:net';
import { z } from 'zod';

/**
 * Where the bot itself runs, as the Kubernetes downward API tells its pod: the kubelet fills
 * `spec.nodeName` with the pod's Node, `status.hostIP` with that Node's first address and
 * `status.podIP` with the pod's first address (kubernetes/kubernetes `pkg/kubelet/kubelet_pods.go`,
 * `podFieldSelectorRuntimeValue`, at commit 001a80e9). Each is unset when the deployment does not say.
 */
export interface BotPlacement {
  nodeName: string | undefined;
  hostIp: string | undefined;
  podIp: string | undefined;
}

/** True when the deployment said nothing about where the bot runs. */
export function placementUnknown(placement: BotPlacement): boolean {
  return placement.nodeName === undefined && placement.hostIp === undefined && placement.podIp === undefined;
}

export const IpAddress = z.string().refine((s) => isIP(s) !== 0, { message: 'must be an IPv4 or IPv6 address, such as 10.0.50.21' });

/**
 * A Node's name as the API server accepts it: a DNS-1123 subdomain (kubernetes/kubernetes
 * `pkg/apis/core/validation/validation.go`, `ValidateNodeName = NameIsDNSSubdomain`; apimachinery's
 * `IsDNS1123Subdomain`): at most 253 characters, lowercase labels of letters, digits and `-`,
 * joined by dots. A single label would refuse real names such as `node1.example.org`.
 */
export const KubernetesNodeName = z
  .string()
  .max(253, 'must be a Kubernetes Node name of at most 253 characters')
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    'must be a Kubernetes Node name: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit',
  );
