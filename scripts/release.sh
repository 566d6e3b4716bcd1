#!/usr/bin/env bash
# Makes a self-contained release folder: built JavaScript, config/, pipelines/ (examples and
# schema), fixtures/demo/ (the API document's request examples), package.json + package-lock.json with the production dependencies only, installed with
# `npm ci --omit=dev`. It runs with `npm start` (or `node dist/cli.js serve`) and nothing else
# from this repository; the Dockerfile copies exactly this folder.
#   scripts/release.sh [folder]   (default: release/)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$root/release}"
case "$out" in /*) ;; *) out="$PWD/$out" ;; esac
if [ "$out" = "$root" ] || [ "$out" = "/" ]; then echo "release: refusing to write into $out" >&2; exit 2; fi

node "$root/scripts/build.mjs"
rm -rf "$out"
mkdir -p "$out"
cp -R "$root/dist" "$out/dist"
cp -R "$root/config" "$out/config"
cp -R "$root/pipelines" "$out/pipelines"
# The demo batches are the request examples of /openapi.json ("Try it out" in /docs).
mkdir -p "$out/fixtures"
cp -R "$root/fixtures/demo" "$out/fixtures/demo"
cp "$root/.npmrc" "$out/.npmrc"
node "$root/scripts/release-manifest.mjs" "$out"
# Packages already in the npm cache (any install of this lock file put them there) are not
# fetched again: a release made where the tests ran needs no network, and cannot stall on it.
# Install scripts are skipped: the one allowed (better-sqlite3's native build, about a minute) is
# taken from this checkout's own install when it loads on this Node line, and run only otherwise.
(cd "$out" && npm ci --omit=dev --prefer-offline --no-audit --no-fund --loglevel=error --ignore-scripts)
addon=node_modules/better-sqlite3/build/Release/better_sqlite3.node
if (cd "$root" && node -e "new (require('better-sqlite3'))(':memory:').close()" 2>/dev/null); then
  mkdir -p "$(dirname "$out/$addon")"
  cp "$root/$addon" "$out/$addon"
else
  (cd "$out" && npm rebuild better-sqlite3 --loglevel=error)
fi
# The release must start without anything from the repository or its dev dependencies.
node "$out/dist/cli.js" --help >/dev/null
echo "release: $out ($(node -p "require('$out/package.json').version"))" >&2
