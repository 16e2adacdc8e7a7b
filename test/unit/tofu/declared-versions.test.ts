import { describe, expect, it } from 'vitest';
import { declaredInPlan } from '../../../src/tofu/declared-versions.ts';
import { parsePlanJson } from '../../../src/tofu/parse-plan.ts';

/** `tofu show -json` of a plan with these variables and output changes. */
function plan(variables: Record<string, unknown>, outputChanges: Record<string, unknown> = {}) {
  return parsePlanJson(
    JSON.stringify({
      format_version: '1.2',
      variables: Object.fromEntries(Object.entries(variables).map(([k, value]) => [k, { value }])),
      output_changes: outputChanges,
    }),
  );
}

const change = (after: unknown, extra: Record<string, unknown> = {}) => ({
  actions: ['update'],
  before: 'v1.0.0',
  after,
  before_sensitive: false,
  after_sensitive: false,
  ...extra,
});

describe('declaredInPlan', () => {
  it("reads the runbook's variables, with or without the leading v", () => {
    expect(declaredInPlan(plan({ talos_version: 'v1.13.9', talos_kubernetes_version: '1.34.2' }), {})).toEqual({
      talos: { version: 'v1.13.9', source: { variable: 'talos_version' } },
      kubernetes: { version: 'v1.34.2', source: { variable: 'talos_kubernetes_version' } },
    });
  });

  it('reads the outputs the inventory names instead of the variables, and the older terraformOutputs.talosVersion', () => {
    const p = plan({ talos_version: 'v1.12.11' }, { tv: change('v1.13.9'), kv: change('v1.34.1') });
    expect(declaredInPlan(p, { declaredVersions: { talos: 'tv', kubernetes: 'kv' } })).toEqual({
      talos: { version: 'v1.13.9', source: { output: 'tv' } },
      kubernetes: { version: 'v1.34.1', source: { output: 'kv' } },
    });
    expect(declaredInPlan(p, { terraformOutputs: { talosVersion: 'tv' } }).talos).toEqual({ version: 'v1.13.9', source: { output: 'tv' } });
  });

  it('says why a version cannot be read, never quoting the value', () => {
    const p = plan(
      { talos_kubernetes_version: 'SECRET-not-a-version' },
      { tv: change('v1.13.9', { after_sensitive: true }), unknown: change(null, { after_unknown: true }) },
    );
    expect(declaredInPlan(p, { declaredVersions: { talos: 'tv' } })).toEqual({
      talos: { off: "the plan's output tv is sensitive, so the bot does not read it; declare it without sensitive = true" },
      kubernetes: { off: "the plan's variable talos_kubernetes_version is not a Kubernetes version such as v1.13.9" },
    });
    expect(declaredInPlan(p, { declaredVersions: { talos: 'unknown', kubernetes: 'gone' } })).toEqual({
      talos: { off: "the plan's output unknown is known only after apply" },
      kubernetes: {
        off: "the plan has no output gone (declaredVersions.kubernetes); declare it, or name the output that carries it in the inventory's declaredVersions.kubernetes",
      },
    });
  });
});
