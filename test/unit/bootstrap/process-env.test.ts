import { describe, expect, it } from 'vitest';
import { takeEnvironment } from '../../../src/bootstrap/process-env.ts';

describe('takeEnvironment', () => {
  it('hands every variable to the configuration and deletes the credentials from the live environment', () => {
    // Arrange
    const live: NodeJS.ProcessEnv = {
      PATH: '/usr/bin',
      SLACK_BOT_TOKEN: 'xoxb-live-0123456789',
      SLACK_APP_TOKEN: 'xapp-live-0123456789',
      SLACK_SIGNING_SECRET: 'signing-live-0123456789',
      REDIS_URL: 'redis://:pass@127.0.0.1:6379',
      SLACK_BOT_TOKEN_FILE: '/run/secrets/bot-token',
      TF_VAR_proxmox_api_token: 'root@pam!bot=live',
      TF_VAR_environment: 'production',
      SSL_CERT_FILE: '/etc/ssl/certs/ca.pem',
      NODE_EXTRA_CA_CERTS: '/etc/ssl/extra.pem',
    };
    const before = { ...live };

    // Act
    const taken = takeEnvironment(live);

    // Assert
    expect(taken).toEqual(before);
    expect(Object.keys(live).sort()).toEqual(
      ['NODE_EXTRA_CA_CERTS', 'PATH', 'SLACK_BOT_TOKEN_FILE', 'SSL_CERT_FILE', 'TF_VAR_environment'].sort(),
    );
  });
});
