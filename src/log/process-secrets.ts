/**
 * Which values the process holds are secrets, so the composition root registers each with the
 * scrubber before anything can print it.
 */

/**
 * Names of variables that carry a credential: anything naming a token, secret, password, key,
 * credential or auth, and every variable of the provider families whose variables are mostly
 * credentials (AWS_, ARM_, GOOGLE_, PM_API, PROXMOX_, B2_, and Terraform's TF_VAR_, TF_TOKEN_ and
 * TF_HTTP_, which carry provider inputs and backend passwords). Case does not matter:
 * `TF_VAR_proxmox_api_token` counts.
 */
const SECRET_NAME =
  /TOKEN|SECRET|PASSWORD|PASSWD|KEY|CREDENTIAL|AUTH|^AWS_|^ARM_|^GOOGLE_|^PM_API|^PROXMOX_|^B2_|^TF_VAR_|^TF_TOKEN_|^TF_HTTP_/i;

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

/** The values of the secret variables of an environment. */
export function secretEnvValues(env: Record<string, string>): string[] {
  return Object.entries(env)
    .filter(([name]) => isSecretVariable(name))
    .map(([, value]) => value);
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
