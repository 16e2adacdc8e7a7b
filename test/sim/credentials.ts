/**
 * Operator credentials as Terraform outputs them. Every secret embeds the canary so that a test can
 * prove the bot never leaks one into a log line or a Slack message.
 */
import { createHash, randomBytes } from 'node:crypto';
import { parse } from 'yaml';
import type { SimCluster } from './types.ts';

function pem(label: string, body: string): string {
  const lines = body.match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join('\n')}\n-----END ${label}-----\n`;
}

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

export interface ClusterCredentials {
  talosconfig: string;
  kubeconfig: string;
  token: string;
  talosKey: string;
  /**
   * The cluster secrets `talos_machine_secrets` keeps in the state (sensitive attributes, never a
   * `tofu output`): they carry the secrets canary, so a test can prove that what `tofu show -json`
   * prints in plain text goes nowhere.
   */
  machineSecrets: string;
}

export interface CredentialInput {
  cluster: string;
  canary: string;
  /** Carried only by the sensitive attributes of the plan (default: `canary`). */
  secretsCanary?: string;
  endpoints: readonly string[];
  nodes: readonly string[];
  kubeApiUrl: string;
}

/** A talosconfig and kubeconfig in the shapes `tofu output -raw` returns for the siderolabs/talos provider. */
export function createCredentials(input: CredentialInput): ClusterCredentials {
  const salt = randomBytes(12).toString('base64url');
  const fakeDer = (seed: string): string => createHash('sha512').update(seed).digest('base64');
  const ca = b64(pem('CERTIFICATE', `MIIBPzCB8qADAgECAhEA${fakeDer(`${input.cluster}-ca-${salt}`)}`));
  const crt = b64(pem('CERTIFICATE', `MIIBKjCB3aADAgECAhEA${fakeDer(`${input.cluster}-crt-${salt}`)}`));
  // The key is base64 of a PEM whose body holds the canary, and the canary also sits verbatim in
  // the encoded value (between two base64 runs), so a leak of either the raw or the decoded key
  // contains it.
  const talosKey = `${b64(pem('ED25519 PRIVATE KEY', `MC4CAQAwBQYDK2VwBCIEI${input.canary}${salt}`))}${input.canary}${b64(salt)}`;
  const list = (items: readonly string[]): string => items.map((i) => `            - ${i}`).join('\n');
  const talosconfig =
    `context: ${input.cluster}\n` +
    `contexts:\n` +
    `    ${input.cluster}:\n` +
    `        endpoints:\n${list(input.endpoints)}\n` +
    `        nodes:\n${list(input.nodes)}\n` +
    `        ca: ${ca}\n` +
    `        crt: ${crt}\n` +
    `        key: ${talosKey}\n`;
  const token = `sim-${input.cluster}.${input.canary}.${salt}`;
  const user = `admin@${input.cluster}`;
  const kubeconfig =
    `apiVersion: v1\n` +
    `kind: Config\n` +
    `clusters:\n` +
    `- name: ${input.cluster}\n` +
    `  cluster:\n` +
    // Plain HTTP on loopback; client-node accepts an http server only with TLS verification off.
    `    insecure-skip-tls-verify: true\n` +
    `    server: ${input.kubeApiUrl}\n` +
    `contexts:\n` +
    `- name: ${user}\n` +
    `  context:\n` +
    `    cluster: ${input.cluster}\n` +
    `    namespace: default\n` +
    `    user: ${user}\n` +
    `current-context: ${user}\n` +
    `users:\n` +
    `- name: ${user}\n` +
    `  user:\n` +
    `    token: ${token}\n` +
    `preferences: {}\n`;
  const machineSecrets = `cluster-id-${b64(`${input.cluster}-${salt}`)} secret-${input.secretsCanary ?? input.canary} bootstrap-token-${salt.slice(0, 6)}`;
  return { talosconfig, kubeconfig, token, talosKey, machineSecrets };
}

export interface TalosContext {
  cluster: SimCluster;
  endpoints: string[];
  nodes: string[];
}

/** What talosctl would print before reaching any node, when the talosconfig does not get it there. */
export class CredentialError extends Error {}

const HANDSHAKE_FAILURE =
  'rpc error: code = Unavailable desc = connection error: desc = "transport: authentication handshake failed: ' +
  'tls: failed to verify certificate: x509: certificate signed by unknown authority"';

/** Finds the cluster whose client key the talosconfig carries, as mutual TLS would. */
export function authenticate(clusters: Iterable<SimCluster>, talosconfig: string, contextOverride: string | undefined): TalosContext {
  let doc: unknown;
  try {
    doc = parse(talosconfig);
  } catch (error) {
    throw new CredentialError(`failed to parse config: ${(error as Error).message.split('\n')[0]}`);
  }
  const config = (doc ?? {}) as { context?: string; contexts?: Record<string, Record<string, unknown>> };
  const name = contextOverride ?? config.context;
  if (!name) throw new CredentialError('failed to determine endpoints');
  const ctx = config.contexts?.[name];
  if (!ctx) throw new CredentialError(`context ${JSON.stringify(name)} is not defined in 'contexts' key in config`);
  const endpoints = Array.isArray(ctx['endpoints']) ? (ctx['endpoints'] as unknown[]).map(String) : [];
  const nodes = Array.isArray(ctx['nodes']) ? (ctx['nodes'] as unknown[]).map(String) : [];
  if (endpoints.length === 0) throw new CredentialError('failed to determine endpoints');
  const key = typeof ctx['key'] === 'string' ? ctx['key'] : '';
  for (const cluster of clusters) {
    if (cluster.credentials.talosKey === key) return { cluster, endpoints, nodes };
  }
  throw new CredentialError(HANDSHAKE_FAILURE);
}
