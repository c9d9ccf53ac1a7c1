# Sourced by .ci/run and .ci/extra.sh: `phase CMD...` runs CMD and then prints how long
# it took (wall time), whether it passed or not.
phase() {
  local start=$SECONDS status=0
  "$@" || status=$?
  echo "==> [ci] $* took $((SECONDS - start)) s (exit $status)"
  return "$status"
}
