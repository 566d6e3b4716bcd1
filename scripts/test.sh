#!/usr/bin/env bash
# `npm test`: type-check and lint, then every test file on the supported Node.js LTS line (24), then,
# when the machine's own Node is another line, what could differ on it: the pure tests, the native
# addon (the embedded history) and `serve` with that addon. `npm test`'s pretest has brought the
# services up. Ends with the time taken and one line for the whole run: `N passed, N failed, N skipped`.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
lts_major=24
machine_major=$(node -p 'process.versions.node.split(".")[0]')
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

# The LTS line's binary and addon (a minute's build, once) while the type-check runs.
if [ "$machine_major" != "$lts_major" ]; then
  bash scripts/node-lts.sh prepare >"$logs/prepare.out" 2>"$logs/prepare.err" &
  preparing=$!
fi

status=0
npm run --silent typecheck || status=1
npm run --silent lint || status=1
if [ "$status" != 0 ]; then echo "test: typecheck or lint failed" >&2; exit 1; fi

suite() { # NAME CMD…: runs CMD with its output shown and kept, for the summary at the end
  local name=$1
  shift
  "$@" 2>&1 | tee "$logs/$name.log"
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
}

if [ "$machine_major" = "$lts_major" ]; then
  suite lts env NO_COLOR=1 node node_modules/vitest/vitest.mjs run
else
  if ! wait "$preparing"; then
    cat "$logs/prepare.err" >&2
    echo "test: could not prepare Node.js $lts_major (above)" >&2
    exit 1
  fi
  suite lts bash scripts/node-lts.sh run env NO_COLOR=1 node node_modules/vitest/vitest.mjs run
  echo "test: on the machine's Node.js $(node --version): the pure tests, the native addon and serve" >&2
  suite machine env NO_COLOR=1 TEST_SET=machine-line node node_modules/vitest/vitest.mjs run
fi

# One closing line for the whole run, summed over the runs above.
totals=$(cat "$logs"/*.log | grep -E '^[0-9]+ passed, [0-9]+ failed' |
  awk -F'[ ,]+' '{p += $1; f += $3; s += $5} END {printf "%d passed, %d failed, %d skipped", p, f, s}')
runs=$(cat "$logs"/*.log | grep -cE '^[0-9]+ passed, [0-9]+ failed')
expected=$([ "$machine_major" = "$lts_major" ] && echo 1 || echo 2)
[ "$runs" = "$expected" ] || { echo "test: $runs of $expected runs printed a summary" >&2; status=1; }
echo "test: $(( (SECONDS - started) / 60 )) min $(( (SECONDS - started) % 60 )) s for type-check, lint and $runs run(s)"
echo "$totals"
exit "$status"
