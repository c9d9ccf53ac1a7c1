#!/usr/bin/env bash
# The Debian 12 leg of CI, on this machine (Ruby 3.1, GCC 12, json-c 0.16, libcurl 7.88):
# the README's test command on a fresh clone, the warning checks, the demo, then a short
# fuzz pass and the specs that reach the extension against a sanitized build
# (.ci/extra.sh). Each phase prints its wall time, so that a slower CI says where.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/phase.sh

phase bin/setup --fuzz
phase bundle exec rake warnings             # no compiler warning, no deprecation from the gem's files
phase bundle exec rake                      # compile, C tests under ASan/UBSan, the spec suite
phase bundle exec exe/llm_failover demo     # the README's first command must keep working
if [ -x .ci/extra.sh ]; then .ci/extra.sh; fi
