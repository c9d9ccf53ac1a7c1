#!/usr/bin/env bash
# Called by .ci/debian12.sh after the main test command:
# - a short pass of every libFuzzer target (10 s each, seeded from the recorded
#   traffic; needs clang and its libFuzzer runtime: bin/setup --fuzz);
# - the specs that reach the extension against an ASan/UBSan build of it (rake sanitize:spec,
#   a few minutes), so that the binding's memory errors stop a change, not only the core's.
# Left out of CI: `rake spec:valgrind` (12 min idle, far longer loaded; needs the bench group; its leak check
# guesses on Ruby 3.1, see rakelib/valgrind.rake) and `rake bench`.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/phase.sh

FUZZ_SECONDS="${FUZZ_SECONDS:-10}" phase bundle exec rake fuzz
# sanitize:spec, not sanitize: the C tests under ASan/UBSan (rake ctest) already ran in
# .ci/run's `bundle exec rake`; once is enough.
phase bundle exec rake sanitize:spec
