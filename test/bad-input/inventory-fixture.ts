/** The valid two-cluster inventory the bad-inventory corpus departs from. */
export const VALID_INVENTORY = `clusters:
  staging:
    environment: staging
    channel: C0MAINTSTG
    terraformDir: /srv/infra/terraform/staging
    controlPlanes: [10.0.20.204]
    workers: [10.0.20.205]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd/staging
    operators: [U0ALICE, U0BOB]
    approvers: [U0CAROL, S0SRE]
  production:
    environment: production
    channel: C0MAINTPRD
    terraformDir: /srv/infra/terraform/production
    controlPlanes: [10.0.30.11, 10.0.30.12, 10.0.30.13]
    workers: []
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd/production
    operators: [U0ALICE, U0BOB]
    approvers: [U0CAROL, S0SRE]
`;
