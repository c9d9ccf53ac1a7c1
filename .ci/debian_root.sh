#!/usr/bin/env bash
# A CI leg in a minimal Debian root: `.ci/debian_root.sh trixie` is .ci/run's Debian 13
# leg (Ruby 3.3, GCC 14, json-c 0.18, libcurl 8); `bookworm` checks a bare Debian 12.
# The root is made with debootstrap --variant=minbase from Debian's mirror, and a clone
# of this commit is copied into it (not the working tree: the root's Ruby builds a
# lib/llm_failover/llm_failover.so of its own). There, as on a new user's machine:
# bin/setup, the warning checks (rakelib/warnings.rake), bundle exec rake (compile, C
# tests under ASan/UBSan, the spec suite) and the demo. Each phase prints its wall time.
#
# A local run may keep the bare root: LLM_FAILOVER_ROOT_CACHE=DIR makes it once in
# DIR/RELEASE and lays every later run's changes over it (overlayfs). With CI=true the
# root is always made afresh.
set -euo pipefail
# Every mount of the leg lives in a mount namespace of its own.
if [ -z "${LF_IN_MOUNT_NS:-}" ]; then
  LF_IN_MOUNT_NS=1 exec unshare --mount --propagation private "$0" "$@"
fi
ROOT_RELEASE="${1:-trixie}"
cd "$(dirname "$0")/.."
. .ci/phase.sh
. .ci/root.sh

commit="$(git rev-parse HEAD)"
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "==> [ci] $ROOT_RELEASE: uncommitted changes are not tested here (the root gets $commit)"
fi
scratch="$(mktemp -d "/var/tmp/llm_failover-$ROOT_RELEASE.XXXXXX")"
ROOT_DIR="$scratch/root"
cleanup() {
  local status=$?
  root_teardown "$ROOT_DIR"
  # --one-file-system: never into a mount that outlived the teardown
  if findmnt -rn -o TARGET | grep -qE "^$ROOT_DIR(/|$)"; then
    echo "==> [ci] $ROOT_RELEASE: mounts left under $ROOT_DIR; not removed" >&2
  else
    rm -rf --one-file-system "$scratch"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

cache="${LLM_FAILOVER_ROOT_CACHE:-}"
if [ "${CI:-}" != true ] && [ -n "$cache" ]; then
  if [ ! -d "$cache/$ROOT_RELEASE" ]; then
    mkdir -p "$cache"
    rm -rf "$cache/$ROOT_RELEASE.new"
    phase root_make "$cache/$ROOT_RELEASE.new"
    mv "$cache/$ROOT_RELEASE.new" "$cache/$ROOT_RELEASE"
  fi
  root_overlay "$cache/$ROOT_RELEASE" "$ROOT_DIR" "$scratch"
else
  phase root_make "$ROOT_DIR"
fi
root_enter "$ROOT_DIR"

mkdir -p "$ROOT_DIR/src"
git clone --quiet --no-checkout . "$ROOT_DIR/src/llm_failover"
git -C "$ROOT_DIR/src/llm_failover" cat-file -e "$commit^{commit}" 2>/dev/null ||
  git -C "$ROOT_DIR/src/llm_failover" fetch --quiet "$PWD" "$commit"
git -C "$ROOT_DIR/src/llm_failover" checkout --quiet --detach "$commit"

echo "==> [ci] $ROOT_RELEASE: $(in_root sh -c '. /etc/os-release; echo "$PRETTY_NAME"')"
phase in_root bin/setup
echo "==> [ci] $ROOT_RELEASE: $(in_root ruby -v), $(in_root gcc --version | head -n 1)," \
     "json-c $(in_root pkg-config --modversion json-c), libcurl $(in_root pkg-config --modversion libcurl)"
phase in_root bundle exec rake warnings     # no compiler warning, no deprecation from the gem's files
phase in_root bundle exec rake              # compile, C tests under ASan/UBSan, the spec suite
phase in_root bundle exec exe/llm_failover demo
