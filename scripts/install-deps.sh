#!/usr/bin/env bash
# Installs the Debian packages the build, the demo and the tests need.
# Idempotent: when everything is present it only runs dpkg-query.
set -euo pipefail
# --runtime: only what building the extension and running the demo need.
PKGS=(g++ cmake make postgresql-15 postgresql-server-dev-15 libxxhash-dev)
if [ "${1:-}" != "--runtime" ]; then
  PKGS+=(git clang-format libgtest-dev librapidcheck-dev libbenchmark-dev libpq-dev
        python3-psycopg2 lintian prometheus)
fi
missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
