import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

const Talosconfig = z.object({
  context: z.string().min(1),
  contexts: z.record(z.string(), z.looseObject({ endpoints: z.array(z.string()).optional() })),
});

/**
 * The endpoints of the current context of a talosconfig. The file holds the cluster's client key,
 * so errors name only what is missing, never a line or a value of the file.
 *
 * @throws {Error} when the text is not a talosconfig with a current context
 */
export function talosconfigEndpoints(text: string): string[] {
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch {
    throw new Error('the talosconfig from `tofu output -raw talosconfig` is not valid YAML; check the Terraform output');
  }
  const parsed = Talosconfig.safeParse(doc);
  if (!parsed.success) {
    throw new Error(
      'the talosconfig from `tofu output -raw talosconfig` names no current context with its contexts; check the Terraform output',
    );
  }
  const current = parsed.data.contexts[parsed.data.context];
  if (current === undefined) {
    throw new Error(
      'the current context of the talosconfig from `tofu output -raw talosconfig` is not among its contexts; check the Terraform output',
    );
  }
  return current.endpoints ?? [];
}
