#!/usr/bin/env bash
# A Docker engine and Compose v2 for the compose-stack test (test/deploy/compose-stack.compose.ts),
# on a machine with no engine running, such as CI's: Debian's docker.io, started by hand.
#
#   bash scripts/dev/docker-engine.sh        prints DOCKER_HOST=… (last line) for the engine to use
#
# An engine that already answers (DOCKER_HOST, or the default socket) is used as it is. Otherwise
# Debian's docker.io is installed if missing and a dockerd is started with all its state under
# STRIPE_INBOX_DOCKER_DIR (default /var/tmp/stripe-inbox-docker): images, build cache and volumes
# survive for the next run, and nothing of a system engine's is touched. Needs root. Compose v2
# is not packaged in Debian 12: when `docker compose` is missing, Debian 13's docker-compose
# package (a static binary) is fetched from Debian's archive through an apt configuration of its
# own, never the system's sources, and its plugin put in ~/.docker/cli-plugins.
set -euo pipefail

DIR="${STRIPE_INBOX_DOCKER_DIR:-/var/tmp/stripe-inbox-docker}"
fail() { echo "docker-engine: $*" >&2; exit 1; }

engine_answers() { timeout 10 docker info >/dev/null 2>&1; }

start_engine() {
  if ! command -v dockerd >/dev/null; then
    echo "docker-engine: installing Debian's docker.io" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
  fi
  mkdir -p "$DIR"
  export DOCKER_HOST="unix://$DIR/docker.sock"
  engine_answers && return 0
  # A dockerd of an earlier run that died leaves its pid file and socket behind.
  rm -f "$DIR/docker.sock" "$DIR/docker.pid"
  echo "docker-engine: starting dockerd (state in $DIR)" >&2
  setsid dockerd --data-root "$DIR/data" --exec-root "$DIR/exec" --pidfile "$DIR/docker.pid" \
    -H "$DOCKER_HOST" >>"$DIR/dockerd.log" 2>&1 </dev/null &
  for _ in $(seq 1 60); do engine_answers && return 0; sleep 0.5; done
  tail -n 30 "$DIR/dockerd.log" >&2
  fail "dockerd did not answer within 30 s (log: $DIR/dockerd.log)"
}

install_compose() {
  local apt="$DIR/trixie-apt" opts
  mkdir -p "$apt/sources" "$apt/lists/partial" "$apt/cache/archives/partial" "$HOME/.docker/cli-plugins"
  cat >"$apt/sources/trixie.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt/sources" -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
  echo "docker-engine: fetching Compose v2 (Debian 13's docker-compose package)" >&2
  apt-get "${opts[@]}" update -qq
  rm -f "$apt"/docker-compose_*.deb
  (cd "$apt" && apt-get "${opts[@]}" download docker-compose >&2)
  rm -rf "$apt/unpacked" && dpkg-deb -x "$apt"/docker-compose_*.deb "$apt/unpacked"
  install -m 0755 "$apt/unpacked/usr/libexec/docker/cli-plugins/docker-compose" "$HOME/.docker/cli-plugins/docker-compose"
}

command -v docker >/dev/null || start_engine
engine_answers || start_engine
docker compose version >/dev/null 2>&1 || install_compose
docker compose version >/dev/null 2>&1 || fail "docker compose does not run after installing it"
echo "DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock}"
