import { join } from 'node:path';

/** A cluster as far as where its Terraform lies: a directory, or the bot's own copy of a repository under it. */
export interface TerraformLocation {
  terraformDir: string;
  terraformRepo?: { url: string; ref: string; path: string };
}

/** The bot's own git copy of a cluster's `terraformRepo`, under its `terraformDir`. */
export function terraformCheckoutDir(cluster: Pick<TerraformLocation, 'terraformDir'>): string {
  return join(cluster.terraformDir, 'checkout');
}

/** Where tofu runs for a cluster: its `terraformDir`, or the repository's `path` in the bot's copy. */
export function terraformWorkDir(cluster: TerraformLocation): string {
  return cluster.terraformRepo === undefined ? cluster.terraformDir : join(terraformCheckoutDir(cluster), cluster.terraformRepo.path);
}
