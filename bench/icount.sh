#!/usr/bin/env bash
# Instructions per call, from callgrind: the difference between a run of N1 and a run
# of N2 calls, divided by N2 - N1, so that start-up and loading cancel out. Unlike wall
# time on a shared machine, the count hardly moves between runs (about 1% here).
#
#   bench/icount.sh N1 N2 COMMAND...     every {N} in COMMAND becomes N1, then N2
#
#   F=http://127.0.0.1:PORT/fast/v1      # the bench's nginx (bench/peer.rb)
#   bench/icount.sh 200 1200 tmp/bench/curl_floor $F/chat/completions {N} tmp/bench/request.json
#   bench/icount.sh 200 1200 tmp/bench/core_loop $F {N}
#   bench/icount.sh 200 1200 ruby bench/clients.rb gem {N} $F    # divide by 1.1: clients.rb warms up N/10 more
set -euo pipefail
[ $# -ge 3 ] || { sed -n '2,12p' "$0"; exit 2; }
n1=$1 n2=$2
shift 2
count() {
  local n=$1 args=() a
  shift
  for a in "$@"; do args+=("${a//\{N\}/$n}"); done
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "${args[@]}" 2>&1 >/dev/null |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
a=$(count "$n1" "$@")
b=$(count "$n2" "$@")
echo "instructions per call: $(( (b - a) / (n2 - n1) ))"
