#!/usr/bin/env bash
# Publishes manifests/ as the OCI artifact the Flux example deploys
# (manifests/flux/talos-chatops.yaml, OCIRepository talos-chatops):
#
#   scripts/publish-manifests.sh oci://registry.example.org/platform/talos-chatops-manifests 0.1.0
#
# Run it from a clean checkout of the release tag (docs/deploy.md, "Release"), after
# `flux` is logged in to the registry (or with docker's credentials). The artifact
# records the repository and the commit it was built from.
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 oci://<registry>/<repository> <version>   e.g. $0 oci://registry.example.org/platform/talos-chatops-manifests 0.1.0" >&2
  exit 2
fi
repository=$1
version=${2#v}

cd "$(dirname "$0")/.."
command -v flux >/dev/null || { echo "flux CLI not found: install it (https://fluxcd.io/flux/installation/#install-the-flux-cli)" >&2; exit 1; }
if [[ -n "$(git status --porcelain -- manifests)" ]]; then
  echo "manifests/ has uncommitted changes: publish only what a commit holds" >&2
  exit 1
fi
if [[ "$(node -p 'require("./package.json").version')" != "$version" ]]; then
  echo "version $version is not package.json's: tag the release first (docs/deploy.md, \"Release\")" >&2
  exit 1
fi

source_url=$(git config --get remote.origin.url || echo unknown)
revision="$(git describe --tags --always)@sha1:$(git rev-parse HEAD)"

# The Slack app manifest and the Secret templates are for people, not for Flux.
flux push artifact "$repository:$version" \
  --path=manifests \
  --source="$source_url" \
  --revision="$revision" \
  --ignore-paths='slack-app.yaml,secret.example.yaml,flux/'
echo "published $repository:$version; set ref.tag: $version in the OCIRepository talos-chatops"
