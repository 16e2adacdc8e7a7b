import { describe, expect, it } from 'vitest';
import { talosconfigEndpoints } from '../../../src/talos/talosconfig-endpoints.ts';

const KEY = 'LS0tLS1CRUdJTiBFRDI1NTE5IFBSSVZBVEUgS0VZLS0tLS0KTUM0Q0FRQXdCUVlESzJWd0JDSUVJ';

/** A talosconfig as `tofu output -raw talosconfig` prints it (siderolabs/talos provider). */
const TALOSCONFIG = `context: production
contexts:
    production:
        endpoints:
            - 10.0.30.11
            - 10.0.30.12
            - 10.0.30.13
        nodes:
            - 10.0.30.11
        ca: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
        crt: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
        key: ${KEY}
    staging:
        endpoints:
            - 10.0.20.204
`;

describe('talosconfigEndpoints', () => {
  it('reads the endpoints of the current context only', () => {
    expect(talosconfigEndpoints(TALOSCONFIG)).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(talosconfigEndpoints(TALOSCONFIG.replace('context: production', 'context: staging'))).toEqual(['10.0.20.204']);
  });

  it('is empty for a context without endpoints', () => {
    expect(talosconfigEndpoints('context: a\ncontexts:\n  a:\n    key: x\n')).toEqual([]);
  });

  it('names what is missing without quoting the file', () => {
    const broken = `context: production\ncontexts:\n  production: [\n  key: ${KEY}`;
    expect(() => talosconfigEndpoints(broken)).toThrow('is not valid YAML');
    expect(() => talosconfigEndpoints(broken)).not.toThrow(new RegExp(KEY.slice(0, 20)));
    expect(() => talosconfigEndpoints(TALOSCONFIG.replace('context: production', 'context: qa'))).toThrow(
      'current context of the talosconfig',
    );
    expect(() => talosconfigEndpoints(`contexts: {}\nkey: ${KEY}`)).toThrow('names no current context');
  });
});
