/**
 * Which values the process holds are secrets, so the composition root registers each with the
 * scrubber before anything can print it.
 */

/**
 * Names of variables that carry a credential: anything naming a token, secret, password, key,
 * credential, private material, a certificate or auth, and every variable of the provider
 * families whose variables are mostly credentials (AWS_, ARM_, GOOGLE_, PM_API, PROXMOX_, B2_, and
 * Terraform's TF_TOKEN_ and TF_HTTP_, which carry registry tokens and backend passwords). Case does
 * not matter: `TF_VAR_proxmox_api_token` counts.
 *
 * `TF_VAR_*` counts only by its name: those are the configuration's inputs, and most are plain
 * settings (`TF_VAR_environment=production`, a version, a node count) which, blanked, would
 * erase the cluster's name from every message.
 */
const SECRET_NAME =
  /TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL|PRIVATE|CERT|AUTH|^AWS_|^ARM_|^GOOGLE_|^PM_API|^PROXMOX_|^B2_|^TF_TOKEN_|^TF_HTTP_/i;

/** Variables of those families that name a place, never a credential: blanking them would only hide where tofu ran. */
const NOT_SECRET = new Set([
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_PROFILE',
  'ARM_ENVIRONMENT',
  'GOOGLE_REGION',
  'GOOGLE_ZONE',
  'TF_IN_AUTOMATION',
]);

/** Whether a variable of a child's environment (tofu's provider and backend settings) is a secret. */
export function isSecretVariable(name: string): boolean {
  return SECRET_NAME.test(name) && !NOT_SECRET.has(name.toUpperCase());
}

/** The secret variables of an environment, by name. */
export function secretEnvEntries(env: Record<string, string>): [name: string, value: string][] {
  return Object.entries(env).filter(([name]) => isSecretVariable(name));
}

/** The values of the secret variables of an environment. */
export function secretEnvValues(env: Record<string, string>): string[] {
  return secretEnvEntries(env).map(([, value]) => value);
}

/** The password of a `redis://[user]:password@host` URL, decoded; undefined without one or for an unreadable URL. */
export function redisPassword(url: string): string | undefined {
  try {
    const password = new URL(url).password;
    return password === '' ? undefined : decodeURIComponent(password);
  } catch {
    return undefined;
  }
}
