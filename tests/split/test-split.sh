#!/usr/bin/env sh
# (env first: under the valgrind test setup, valgrind then checks env, not the shell.)
# sedp model split on every synthetic arch (mlp, dlrm, dcn, deepfm, mmoe, wdl, dcnv2, dssm, esmm,
# ple), small and realistic presets, and the mixed-dim archs at opsets with axes as attributes and as inputs: split, run
# the dense model through `sedp run` (data_reader, one cube_accessor per cube, model_inference)
# and compare with `sedp model eval` of the unsplit model (split-check.py: max relative error
# 1e-5). Usage: test-split.sh SEDP SRCDIR
set -eu
sedp=$1
src=$2
if ! command -v python3 >/dev/null 2>&1; then # in scripts/debian-packages.txt: a skip only by request
  [ "${SEDP_ALLOW_SKIP:-}" = 1 ] && { echo "python3 not found: skipped"; exit 77; }
  echo "FAIL: python3 not found (scripts/install-deps installs it; SEDP_ALLOW_SKIP=1 skips)" >&2
  exit 1
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sedp-split.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
status=0
for preset in small realistic; do
  for arch in mlp dlrm dcn deepfm mmoe wdl dcnv2 dssm esmm ple; do
    python3 "$src/split-check.py" "$sedp" "$tmp" "$arch" "$preset" || status=1
  done
done
for opset in 11 13 18; do
  for arch in mlp deepfm mmoe wdl; do
    python3 "$src/split-check.py" "$sedp" "$tmp" "$arch" small "$opset" || status=1
  done
done
exit $status
