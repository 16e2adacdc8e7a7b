# talos-chatops image: Node 24 runs the TypeScript sources directly (no build step),
# next to checksum-verified talosctl and tofu binaries. See docs/deploy.md.
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg TALOSCTL_VERSION=v1.11.6 --build-arg TALOSCTL_SHA256="amd64:<hex>,arm64:<hex>" \
#     --build-arg TOFU_VERSION=1.10.7 --build-arg TOFU_SHA256="amd64:<hex>,arm64:<hex>" \
#     -t registry.example.org/platform/talos-chatops:0.1.0 --push .
#
# The base image is pinned by the digest of its multi-arch index, so every build of a
# commit starts from the same bytes on both architectures. The tag beside it is for
# the reader; the digest wins. To move to a newer Node 24 (a monthly chore, and at
# once for a Node security release), print the index digest of the new tag and put
# both here:
#   docker buildx imagetools inspect node:24-bookworm-slim
# (the "Digest:" of the top-level index, with "MediaType: ...image.index..."; never
# the digest of one platform's manifest, which would break the other architecture).
ARG NODE_IMAGE=node:24.18.0-bookworm-slim@sha256:6f7b03f7c2c8e2e784dcf9295400527b9b1270fd37b7e9a7285cf83b6951452d

# --- deps: production dependencies only -------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev: the `node` devDependency only pins Node 24 on developer machines; the
# image's own Node runs the bot. --ignore-scripts: the one production package with an
# install script (msgpackr-extract) ships prebuilt binaries as optional packages and
# only compiles from source when none fits, which this slim image could not do anyway.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm cache clean --force

# --- tools: talosctl and tofu, each verified against a pinned sha256 ---------------
FROM ${NODE_IMAGE} AS tools
# Set by BuildKit from --platform (amd64, arm64). Each checksum is either one hex
# value (a build for one platform) or one per architecture, "amd64:<hex>,arm64:<hex>",
# for a multi-platform build.
ARG TARGETARCH
ARG TALOSCTL_VERSION=v1.11.6
ARG TALOSCTL_SHA256
# More talosctl clients, for clusters on other Talos versions: space-separated
# `version=sha256` pairs, e.g. "v1.10.9=<hex> v1.12.11=amd64:<hex>,arm64:<hex>". The
# bot picks the client that matches the running Talos from /opt/talosctl.
ARG TALOSCTL_EXTRA_VERSIONS=""
ARG TOFU_VERSION=1.10.7
ARG TOFU_SHA256

RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl unzip tini \
 && rm -rf /var/lib/apt/lists/*

# No checksum, no binary: an empty or malformed sha256 stops the build with the
# command that prints the right value.
RUN set -eu; \
    arch="${TARGETARCH:-amd64}"; \
    for pair in "${TALOSCTL_VERSION}=${TALOSCTL_SHA256}" ${TALOSCTL_EXTRA_VERSIONS}; do \
      version="${pair%%=*}"; sum="${pair#*=}"; \
      case "${sum}" in *:*) sum="$(printf '%s' "${sum}" | tr ',' '\n' | sed -n "s/^${arch}://p")" ;; esac; \
      if ! printf '%s' "${version}" | grep -Eqx 'v[0-9]+\.[0-9]+\.[0-9]+'; then \
        echo "error: '${version}' is not a talosctl version such as v1.11.6" >&2; exit 1; \
      fi; \
      if ! printf '%s' "${sum}" | grep -Eqx '[0-9a-f]{64}'; then \
        echo "error: no valid sha256 for talosctl ${version} (linux/${arch})." >&2; \
        echo "  Print it with: curl -fsSL https://github.com/siderolabs/talos/releases/download/${version}/sha256sum.txt | grep ' talosctl-linux-${arch}\$'" >&2; \
        echo "  then pass --build-arg TALOSCTL_SHA256=<hex>, or ${arch}:<hex> among the architectures (version=<hex> in TALOSCTL_EXTRA_VERSIONS). See docs/deploy.md." >&2; \
        exit 1; \
      fi; \
      curl -fsSL --proto '=https' -o "/tmp/talosctl-${version}" \
        "https://github.com/siderolabs/talos/releases/download/${version}/talosctl-linux-${arch}"; \
      echo "${sum}  /tmp/talosctl-${version}" | sha256sum -c -; \
      install -D -m 0755 "/tmp/talosctl-${version}" "/opt/talosctl/talosctl-${version}"; \
      rm -f "/tmp/talosctl-${version}"; \
    done; \
    "/opt/talosctl/talosctl-${TALOSCTL_VERSION}" version --client

RUN set -eu; \
    arch="${TARGETARCH:-amd64}"; \
    version="${TOFU_VERSION#v}"; \
    sum="${TOFU_SHA256}"; \
    case "${sum}" in *:*) sum="$(printf '%s' "${sum}" | tr ',' '\n' | sed -n "s/^${arch}://p")" ;; esac; \
    if ! printf '%s' "${sum}" | grep -Eqx '[0-9a-f]{64}'; then \
      echo "error: no valid sha256 for tofu ${version} (linux/${arch})." >&2; \
      echo "  Print it with: curl -fsSL https://github.com/opentofu/opentofu/releases/download/v${version}/tofu_${version}_SHA256SUMS | grep ' tofu_${version}_linux_${arch}.zip\$'" >&2; \
      echo "  then pass --build-arg TOFU_SHA256=<hex>, or ${arch}:<hex> among the architectures. See docs/deploy.md." >&2; \
      exit 1; \
    fi; \
    curl -fsSL --proto '=https' -o /tmp/tofu.zip \
      "https://github.com/opentofu/opentofu/releases/download/v${version}/tofu_${version}_linux_${arch}.zip"; \
    echo "${sum}  /tmp/tofu.zip" | sha256sum -c -; \
    unzip -q /tmp/tofu.zip tofu -d /tmp/tofu; \
    install -D -m 0755 /tmp/tofu/tofu /opt/tofu/tofu; \
    rm -rf /tmp/tofu.zip /tmp/tofu; \
    /opt/tofu/tofu version

# --- runtime ------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# git: a Terraform plan is offered for Apply only from a committed tree (`git status --porcelain`).
# The checkout is mounted, often owned by another uid: the bot trusts each Terraform checkout by
# its own path on the command line, and reads no system or global git configuration at all.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*
# No package manager at run time: npm, npx, corepack and yarn go (dependencies were
# installed in the deps stage), so nothing in the running container can fetch and
# run code from a registry, and their own dependencies need no security updates here.
RUN rm -rf /usr/local/lib/node_modules /usr/local/bin/npm /usr/local/bin/npx \
      /usr/local/bin/corepack /usr/local/bin/yarn /usr/local/bin/yarnpkg /opt/yarn-*
# HOME=/tmp: tofu and talosctl look for per-user files under $HOME, and /tmp is the
# only writable place besides the mounted volumes (the root filesystem is read-only).
ENV NODE_ENV=production \
    HTTP_PORT=3000 \
    TALOSCTL_BIN=/opt/talosctl \
    TOFU_BIN=/usr/local/bin/tofu \
    GIT_BIN=/usr/bin/git \
    PLAN_DIR=/tmp/plans \
    CREDENTIALS_DIR=/tmp/creds \
    HOME=/tmp
WORKDIR /app
# The commit the image is built from (`--build-arg GIT_COMMIT=$(git rev-parse HEAD)`), shown by
# the talos_chatops_build_info metric; empty: the metric has no commit label.
ARG GIT_COMMIT=""
ENV GIT_COMMIT=${GIT_COMMIT}

# tini as PID 1 forwards SIGTERM to Node (graceful shutdown) and reaps the processes
# that tofu providers and talosctl leave behind when a step is cancelled.
COPY --from=tools /usr/bin/tini-static /usr/bin/tini
COPY --from=tools /opt/talosctl/ /opt/talosctl/
COPY --from=tools /opt/tofu/tofu /usr/local/bin/tofu
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src
COPY handlers ./handlers
COPY jobs ./jobs

# The code stays root-owned and read-only to the bot. /tmp/creds is for runs without
# a volume there (docker run --read-only needs --tmpfs /tmp anyway).
RUN install -d -m 0700 -o 10001 -g 10001 /tmp/creds

USER 10001:10001
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.HTTP_PORT || '3000') + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["node", "src/entry.ts"]
