import { describe, expect, it } from 'vitest';
import { isSecretVariable, redisPassword, secretEnvValues } from '../../../src/log/process-secrets.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

describe('isSecretVariable', () => {
  it.each([
    'TF_VAR_proxmox_api_token',
    'TF_TOKEN_app_terraform_io',
    'TF_HTTP_PASSWORD',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_SESSION_TOKEN',
    'ARM_CLIENT_SECRET',
    'ARM_CLIENT_ID',
    'GOOGLE_CREDENTIALS',
    'PM_API_TOKEN_SECRET',
    'PROXMOX_VE_API_TOKEN',
    'PROXMOX_VE_PASSWORD',
    'B2_APPLICATION_KEY',
  ])('counts %s as a secret', (name) => {
    expect(isSecretVariable(name)).toBe(true);
  });

  it.each(['TF_IN_AUTOMATION', 'TF_LOG', 'TF_DATA_DIR', 'AWS_REGION', 'AWS_DEFAULT_REGION', 'AWS_PROFILE', 'TOFU_CLI_CONFIG_FILE'])(
    'does not count %s',
    (name) => {
      expect(isSecretVariable(name)).toBe(false);
    },
  );
});

describe('the secrets the process holds', () => {
  it("registers tofu's secret variables and leaves its settings readable", () => {
    // Arrange
    const scrubber = new SecretScrubber();
    const env = {
      PROXMOX_VE_API_TOKEN: 'terraform@pve!provider=canary-0f1e2d3c4b5a69788796a5b4c3d2e1f0',
      TF_LOG: 'WARN',
      AWS_REGION: 'eu-central-1',
    };

    // Act
    for (const value of secretEnvValues(env)) scrubber.add(value);

    // Assert
    expect(scrubber.scrub(`auth terraform@pve!provider=canary-0f1e2d3c4b5a69788796a5b4c3d2e1f0 failed in eu-central-1 (TF_LOG=WARN)`)).toBe(
      'auth [REDACTED] failed in eu-central-1 (TF_LOG=WARN)',
    );
  });

  it('reads the Redis password from REDIS_URL, decoded, so the scrubber knows it', () => {
    // Arrange
    const scrubber = new SecretScrubber();

    // Act
    scrubber.add(redisPassword('rediss://bot:redis%2Fcanary%40pass-0123456789@redis.internal:6380/2'));

    // Assert
    expect(scrubber.scrub('NOAUTH for redis/canary@pass-0123456789, or a cut redis/canary@pass-01')).toBe(
      'NOAUTH for [REDACTED], or a cut [REDACTED]',
    );
    expect(redisPassword('redis://127.0.0.1:6379')).toBeUndefined();
  });
});
