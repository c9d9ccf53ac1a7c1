#!/usr/bin/env bash
# Called by .ci/run after the main test command: a short pass of every libFuzzer
# target (10 s each, seeded from the recorded traffic). Needs clang-14 and its
# libFuzzer runtime (bin/setup --fuzz). The long checks stay out of CI:
# `rake spec:valgrind` (the suite under valgrind, ~3 min), `rake sanitize`, `rake bench`.
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS="${FUZZ_SECONDS:-10}" bundle exec rake fuzz
