#!/bin/sh
# tools/ort/ensure-deps.sh — makes onnxruntime-node (pinned in package-lock.json) available to
# the reference tools and prints the node_modules folder to put on NODE_PATH.
#
#   1. tools/ort/node_modules, if it holds the pinned onnxruntime-node (a developer's
#      `npm ci --ignore-scripts` there);
#   2. else a cache folder keyed by the lockfile's hash:
#      ${SEDP_ORT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/sedp/ort}/LOCKHASH/node_modules,
#      installed on first use with `npm ci --ignore-scripts` (the package carries its native
#      libraries; no install script runs) and reused after.
#
# Exit status: 0 and the folder on stdout; 77 when Node.js or npm is missing, the install fails
# (offline, registry unreachable) or the installed runtime does not load — the reason on stderr.
set -u
here=$(cd "$(dirname "$0")" && pwd)

skip () {
  echo "ensure-deps: $*" >&2
  exit 77
}

command -v node >/dev/null 2>&1 || skip "node is not installed"
want=$(node -e 'const l=require(process.argv[1]);process.stdout.write(l.packages["node_modules/onnxruntime-node"].version)' \
  "$here/package-lock.json") || skip "cannot read $here/package-lock.json"

# Does folder $1 (a node_modules) hold the pinned onnxruntime-node, loadable here?
usable () {
  [ -f "$1/onnxruntime-node/package.json" ] || return 1
  NODE_PATH="$1" node -e '
    const v = require(process.argv[1] + "/onnxruntime-node/package.json").version;
    if (v !== process.argv[2]) { console.error("onnxruntime-node " + v + " found, " + process.argv[2] + " pinned"); process.exit(1); }
    require(process.argv[1] + "/onnxruntime-node");' "$1" "$want" >&2
}

if usable "$here/node_modules" 2>/dev/null; then
  echo "$here/node_modules"
  exit 0
fi

command -v npm >/dev/null 2>&1 || skip "npm is not installed"
hash=$(node -e 'const c=require("crypto"),f=require("fs");process.stdout.write(c.createHash("sha256").update(f.readFileSync(process.argv[1])).digest("hex").slice(0,16))' \
  "$here/package-lock.json")
base=${SEDP_ORT_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/sedp/ort}
dest="$base/$hash"
if usable "$dest/node_modules" 2>/dev/null; then
  echo "$dest/node_modules"
  exit 0
fi

mkdir -p "$base" || skip "cannot create $base"
tmp=$(mktemp -d "$base/.install.XXXXXX") || skip "cannot create a folder under $base"
cp "$here/package.json" "$here/package-lock.json" "$here/.npmrc" "$tmp/"
echo "ensure-deps: installing onnxruntime-node $want into $dest (npm ci --ignore-scripts)" >&2
to=""
command -v timeout >/dev/null 2>&1 && to="timeout 900"
if ! (cd "$tmp" && $to npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >npm.log 2>&1); then
  tail -n 15 "$tmp/npm.log" >&2
  rm -rf "$tmp"
  skip "npm ci --ignore-scripts failed (see above)"
fi
if ! usable "$tmp/node_modules"; then
  rm -rf "$tmp"
  skip "onnxruntime-node $want installed but does not load on this machine"
fi
# Publish atomically: a concurrent install of the same lockfile may have won the race.
rm -rf "$dest.old"
[ -d "$dest" ] && mv "$dest" "$dest.old"
if mv "$tmp" "$dest" 2>/dev/null; then
  rm -rf "$dest.old"
else
  rm -rf "$tmp"
fi
usable "$dest/node_modules" || skip "onnxruntime-node in $dest does not load"
echo "$dest/node_modules"
