# Sourced by .ci/debian_root.sh: a minimal Debian root to build and test in, as a new
# user's machine would be (debootstrap --variant=minbase from Debian's mirror). Run in a
# mount namespace of its own (unshare --mount): no mount made here reaches the host, even
# if the leg is killed before root_teardown.
#   root_make DIR                 debootstrap RELEASE into DIR
#   root_overlay LOWER DIR SCRATCH  DIR shows LOWER (a cached root, left untouched) with
#                                 this run's changes kept in SCRATCH
#   root_enter DIR                apt sources, this machine's CAs and DNS, /proc, /sys, /dev
#   in_root CMD...                CMD as root in ROOT_DIR's /src/llm_failover, a clean
#                                 environment (UTF-8, no variable of the host's)
#   root_teardown DIR             ends the processes left in DIR, unmounts everything in it

ROOT_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
ROOT_SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

root_make() {
  local dir="$1" log
  log="$(mktemp)"
  if ! debootstrap --variant=minbase "$ROOT_RELEASE" "$dir" "$ROOT_MIRROR" >"$log" 2>&1; then
    tail -n 30 "$log"
    rm -f "$log"
    return 1
  fi
  rm -f "$log"
}

root_overlay() {
  local lower="$1" dir="$2" scratch="$3"
  mkdir -p "$dir" "$scratch/upper" "$scratch/work"
  mount -t overlay overlay -o "lowerdir=$lower,upperdir=$scratch/upper,workdir=$scratch/work" "$dir"
}

root_enter() {
  local dir="$1"
  # The root a mount of its own, as an installed system's is: `unshare --mount-proc`
  # inside it (rerun_after_kill_spec's process "elsewhere") needs one.
  mountpoint -q "$dir" || mount --bind "$dir" "$dir"
  # What an installed Debian has: the release, its updates and its security fixes.
  cat >"$dir/etc/apt/sources.list" <<EOF
deb $ROOT_MIRROR $ROOT_RELEASE main
deb $ROOT_MIRROR $ROOT_RELEASE-updates main
deb $ROOT_SECURITY_MIRROR $ROOT_RELEASE-security main
EOF
  # This machine's own certificate authorities (its HTTPS egress is re-signed by one):
  # the root's ca-certificates takes them in when bin/setup installs it, or now if it is
  # there already (a cached root).
  mkdir -p "$dir/usr/local/share/ca-certificates"
  if [ -d /usr/local/share/ca-certificates ]; then
    cp -r /usr/local/share/ca-certificates/. "$dir/usr/local/share/ca-certificates/"
  fi
  cp -L /etc/resolv.conf "$dir/etc/resolv.conf"
  # No package starts its service here (PostgreSQL's cluster, redis-server on 6379 of
  # the host's network): the specs start the servers they need on ports of their own.
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
  chmod 755 "$dir/usr/sbin/policy-rc.d"
  mount --bind /proc "$dir/proc"
  mount --bind /sys "$dir/sys"
  mount --bind /dev "$dir/dev"
  mount --bind /dev/pts "$dir/dev/pts"
  # PostgreSQL's and Chromium's shared memory: a tmpfs of the root's own.
  mount -t tmpfs -o mode=1777,size=1g tmpfs "$dir/dev/shm"
  if [ -x "$dir/usr/sbin/update-ca-certificates" ]; then
    chroot "$dir" /usr/sbin/update-ca-certificates >/dev/null
  fi
}

in_root() {
  chroot "$ROOT_DIR" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb CI="${CI:-}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    /bin/bash -c 'cd /src/llm_failover && exec "$@"' in_root "$@"
}

root_teardown() {
  local dir="$1" pid pids=() target
  [ -d "$dir" ] || return 0
  # Servers a killed run left behind (the specs start PostgreSQL and redis-server).
  for pid in /proc/[0-9]*; do
    [ "$(readlink "$pid/root" 2>/dev/null)" = "$dir" ] && pids+=("${pid#/proc/}")
  done
  if [ "${#pids[@]}" -gt 0 ]; then
    kill -KILL "${pids[@]}" 2>/dev/null || true
    sleep 1
  fi
  # Deepest first; a mount still busy is detached lazily.
  findmnt -rn -o TARGET | grep -E "^$dir(/|$)" | sort -r | while read -r target; do
    umount "$target" 2>/dev/null || umount -l "$target"
  done
}
