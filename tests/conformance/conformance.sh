#!/usr/bin/env sh
# The ONNX Runtime conformance test: every synthetic model of `sedp model synth`, at several
# batch sizes, through `sedp model eval` and through ONNX Runtime (onnxruntime-node, a reference
# only, never a dependency of sedp); every output must agree element by element with
# |ort − sedp| ≤ 1e-5·max(|ort|,|sedp|) + 1e-6. docs/conformance.md has the matrix and why.
#
# Usage: conformance.sh [--ctr] SEDP_BINARY BUILDDIR SOURCEDIR [VALGRIND_SUPPRESSIONS]
#
# --ctr: instead, the CTR example against ONNX Runtime on its unsplit model (ctr.js): `sedp run`
# of pipelines/ctr.pipeline on the small example's requests (examples/ctr/prepare --small, which
# also needs python3) and ONNX Runtime on model.onnx must give every item the same score within
# a relative 1e-5.
#
# Skips (exit 77) when Node.js or npm is missing or onnxruntime-node cannot be installed
# (tools/ort/ensure-deps.sh: tools/ort/node_modules, else a cache folder filled by
# `npm ci --ignore-scripts` from tools/ort/package-lock.json). Under `meson test --setup
# valgrind` (SEDP_VALGRIND=1) a reduced matrix runs with every sedp command under memcheck;
# the shell itself is not traced (the shebang goes through env(1)).
# SEDP_CONFORMANCE_ARGS adds arguments to conformance.js (e.g. "--keep --arch mlp").
set -eu

mode=models
if [ "${1:-}" = --ctr ]; then
  mode=ctr
  shift
fi
SEDP_BIN=$1
BUILD=$2
SRC=$3
SUPPRESSIONS=${4:-}

skip () {
  echo "SKIP: $*"
  exit 77
}

command -v node >/dev/null 2>&1 || skip "Node.js is not installed (the conformance test needs node and npm)"
command -v npm >/dev/null 2>&1 || skip "npm is not installed (the conformance test needs node and npm)"
if [ $mode = ctr ]; then
  command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (examples/ctr/prepare needs it)"
fi
[ -x "$SEDP_BIN" ] || { echo "FAIL: $SEDP_BIN is not an executable" >&2; exit 1; }

set +e
modules=$("$SRC/tools/ort/ensure-deps.sh")
rc=$?
set -e
if [ $rc -ne 0 ]; then
  skip "onnxruntime-node is not available (tools/ort/ensure-deps.sh exited with $rc; reason above)"
fi
NODE_PATH="$modules${NODE_PATH:+:$NODE_PATH}"
export NODE_PATH
echo "== onnxruntime-node from $modules"

if [ $mode = ctr ]; then
  valgrind=""
  if [ "${SEDP_VALGRIND:-0}" = 1 ] && command -v valgrind >/dev/null 2>&1; then
    valgrind="--valgrind=$SUPPRESSIONS"
  fi
  exec node "$SRC/tests/conformance/ctr.js" --sedp "$SEDP_BIN" --src "$SRC" $valgrind
fi

# The reference tools themselves (protobuf codec, input generation, ORT runs) against a
# double-precision computation, before they judge sedp.
node "$SRC/tools/ort/selftest.js"

extra=""
if [ "${SEDP_VALGRIND:-0}" = 1 ]; then
  if command -v valgrind >/dev/null 2>&1; then
    extra="--valgrind=$SUPPRESSIONS"
  else
    extra="--quick"
  fi
fi
# shellcheck disable=SC2086
exec node "$SRC/tests/conformance/conformance.js" --sedp "$SEDP_BIN" $extra ${SEDP_CONFORMANCE_ARGS:-}
