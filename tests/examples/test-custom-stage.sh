#!/usr/bin/env sh
# Builds the out-of-tree example plugin (examples/custom_stage) the way a user does — its own
# Makefile and `pkg-config sedp`, in a copy of the folder — and checks what it does:
#   1. against this uninstalled build tree (BUILDDIR/meson-uninstalled/sedp-uninstalled.pc);
#   2. `sedp inspect`, `sedp check` and two `sedp run`s of boost.pipeline (boosted and with
#      BOOST_FACTOR=1): boosted scores must be the unboosted ones times the factor exactly on
#      the promoted items;
#   3. a factor out of range is refused by `sedp check` with FILE:LINE: [stage boost] factor;
#   4. a missing input column fails only that request's items, with a message naming the stage
#      and the column;
#   5. against a `meson install --destdir` copy (the installed sedp.pc and headers), including
#      `make install` into the pluginsdir that sedp.pc publishes.
#
# Usage: test-custom-stage.sh SEDP_BINARY BUILDDIR EXAMPLE_DIR MESON [VALGRIND_SUPPRESSIONS]
#
# Under `meson test --setup valgrind` (SEDP_VALGRIND=1) every sedp command runs under valgrind,
# so the host is checked with the out-of-tree plugin loaded. The shell itself is not: the
# shebang goes through env(1), which valgrind does not follow into the exec'd shell.
set -eu

SEDP_BIN=$1
BUILD=$2
SRC=$3
MESON=$4
SUPPRESSIONS=${5:-}

sedp () {
  if [ "${SEDP_VALGRIND:-0}" = 1 ] && command -v valgrind >/dev/null 2>&1; then
    valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
      --show-leak-kinds=definite --num-callers=30 \
      ${SUPPRESSIONS:+--suppressions="$SUPPRESSIONS"} "$SEDP_BIN" "$@"
  else
    "$SEDP_BIN" "$@"
  fi
}

fail () {
  echo "FAIL: $*" >&2
  exit 1
}
step () {
  echo "== $*"
}

for tool in make python3 pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || fail "$tool is needed to build and check the example"
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sedp-custom-stage.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

# A clean copy of the example, as a user would have it (no build outputs).
copy_example () {
  cp -R "$SRC" "$1"
  rm -f "$1"/*.so
}

# ---- 1. build against the uninstalled tree -------------------------------------------------

step "build against $BUILD/meson-uninstalled"
[ -f "$BUILD/meson-uninstalled/sedp-uninstalled.pc" ] ||
  fail "meson did not write $BUILD/meson-uninstalled/sedp-uninstalled.pc"
export PKG_CONFIG_PATH="$BUILD/meson-uninstalled${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
unset PKG_CONFIG_DISABLE_UNINSTALLED || true
pkg-config --exists sedp || fail "pkg-config sedp fails with PKG_CONFIG_PATH=$PKG_CONFIG_PATH"
cflags=$(pkg-config --cflags sedp)
libs=$(pkg-config --libs sedp)
echo "cflags: $cflags"
echo "libs:   $libs"

# The SDK must be reachable: sedp/sedp.h from the source tree and the generated sedp/version.h
# from the build tree; and -L must point at the freshly built libsedp.
have_header () {
  for flag in $cflags; do
    case $flag in
      -I*) [ -f "${flag#-I}/sedp/$1" ] && return 0 ;;
    esac
  done
  return 1
}
have_header sedp.h || fail "pkg-config --cflags sedp has no -I folder with sedp/sedp.h"
have_header version.h || fail "pkg-config --cflags sedp has no -I folder with the generated sedp/version.h"
libsedp_dir=
for flag in $libs; do
  case $flag in
    -L*) [ -e "${flag#-L}/libsedp.so" ] && libsedp_dir=${flag#-L} ;;
  esac
done
[ -n "$libsedp_dir" ] || fail "pkg-config --libs sedp has no -L folder with libsedp.so"
export LD_LIBRARY_PATH="$libsedp_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

ex="$tmp/custom_stage"
copy_example "$ex"
make -C "$ex" CFLAGS="-O2 -g -Werror" || fail "the example does not build against the uninstalled tree"
[ -f "$ex/score_boost.so" ] || fail "make did not produce score_boost.so"

# Hidden visibility: the descriptor is the only symbol the module exports.
if command -v nm >/dev/null 2>&1; then
  exported=$(nm -D --defined-only "$ex/score_boost.so" |
               awk '$2 ~ /^[TDBRVW]$/ && $3 !~ /^_(init|fini)$/ { print $3 }' | sort | tr '\n' ' ')
  [ "$exported" = "sedp_stage_descriptor " ] ||
    fail "score_boost.so exports more than its descriptor: $exported"
fi

# ---- 2. inspect, check, run ----------------------------------------------------------------

export SEDP_PLUGIN_PATH="$ex:${SEDP_PLUGIN_PATH:-$BUILD/plugins}"
unset BOOST_FACTOR || true
pipeline="$ex/boost.pipeline"
requests="$ex/requests.jsonl"

step "sedp inspect score_boost"
sedp inspect score_boost >"$tmp/inspect.txt" || fail "sedp inspect score_boost failed"
cat "$tmp/inspect.txt"
for want in "Plugin: score_boost" "column" "boost_column" "default: promoted" "range: 0..100"; do
  grep -q -- "$want" "$tmp/inspect.txt" || fail "sedp inspect score_boost does not show '$want'"
done
sedp inspect >"$tmp/list.txt" 2>"$tmp/list.err" || fail "sedp inspect failed"
grep -q '^score_boost ' "$tmp/list.txt" || fail "sedp inspect does not list score_boost"

step "sedp check boost.pipeline"
sedp check "$pipeline" >"$tmp/check.txt" || fail "sedp check boost.pipeline failed"
cat "$tmp/check.txt"
grep -q 'boost .*plugin=score_boost scope=item.*after=scorer \[sink\]' "$tmp/check.txt" ||
  fail "sedp check does not show the boost stage as the sink after scorer"

step "sedp run boost.pipeline (boosted, and with BOOST_FACTOR=1)"
sedp run "$pipeline" --requests "$requests" --out "$tmp/boosted.jsonl" --quiet ||
  fail "sedp run (boosted) failed"
(export BOOST_FACTOR=1; sedp run "$pipeline" --requests "$requests" --out "$tmp/raw.jsonl" --quiet) ||
  fail "sedp run (BOOST_FACTOR=1) failed"

# Compares two runs: every item scored, flags as the request file says, and the boosted score
# equal to float32(raw * factor) exactly where the flag is non-zero (raw elsewhere).
cat >"$tmp/compare.py" <<'EOF'
import json
import struct
import sys

requests_path, raw_path, boosted_path, factor = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
skip = set(sys.argv[5].split(",")) if len(sys.argv) > 5 and sys.argv[5] else set()


def f32(x):
    return struct.unpack("f", struct.pack("f", x))[0]


def load(path):
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                out.append(json.loads(line))
    return out


def flags(req):
    """The promoted flag of each item, as the runtime builds the frames."""
    items = req["items"]
    if any("promoted" in it for it in items):
        return [float(it.get("promoted", 0)) for it in items]
    user = req.get("user") or {}
    if "promoted" in user:  # a request-scope feature, broadcast into every item frame
        return [float(user["promoted"])] * len(items)
    return None


requests, raw, boosted = load(requests_path), load(raw_path), load(boosted_path)
errors = []
if [r.get("id") for r in requests] != [r["id"] for r in raw] or [r["id"] for r in raw] != [r["id"] for r in boosted]:
    sys.exit("results are not one per request in input order: %s / %s" %
             ([r["id"] for r in raw], [r["id"] for r in boosted]))
n_boosted = n_plain = 0
for req, a, b in zip(requests, raw, boosted):
    rid = req["id"]
    if rid in skip:
        continue
    want = flags(req)
    for res, name in ((a, "raw"), (b, "boosted")):
        if res["status"] != "ok":
            errors.append("%s: %s run: status %s (%s)" % (rid, name, res["status"], res.get("message")))
        if len(res["items"]) != len(req["items"]):
            errors.append("%s: %s run: %d items, expected %d" % (rid, name, len(res["items"]), len(req["items"])))
    if errors:
        continue
    for i, (x, y) in enumerate(zip(a["items"], b["items"])):
        if x["status"] != "scored" or y["status"] != "scored":
            errors.append("%s item %d: status %s / %s" % (rid, i, x["status"], y["status"]))
            continue
        if float(y["promoted"]) != want[i] or float(x["promoted"]) != want[i]:
            errors.append("%s item %d: promoted %s / %s, expected %s" % (rid, i, x["promoted"], y["promoted"], want[i]))
        expect = f32(x["score"] * factor) if want[i] != 0 else x["score"]
        if abs(y["score"] - expect) > 1e-6 * max(1.0, abs(expect)):
            errors.append("%s item %d: boosted score %r, expected %r (raw %r, promoted %s)" %
                          (rid, i, y["score"], expect, x["score"], want[i]))
        if want[i] != 0:
            n_boosted += 1
        else:
            n_plain += 1
if n_boosted == 0 or n_plain == 0:
    errors.append("the requests must hold promoted and plain items (%d / %d)" % (n_boosted, n_plain))
if errors:
    sys.exit("\n".join(errors))
print("ok: %d boosted and %d plain items checked" % (n_boosted, n_plain))
EOF
python3 "$tmp/compare.py" "$requests" "$tmp/raw.jsonl" "$tmp/boosted.jsonl" 1.5 ||
  fail "boosted scores are wrong"

# ---- 3. options are validated before anything starts ---------------------------------------

step "an out-of-range factor is refused"
factor_line=$(grep -n '^factor' "$pipeline" | cut -d: -f1)
if (export BOOST_FACTOR=200; sedp check "$pipeline" >"$tmp/bad.out" 2>"$tmp/bad.err"); then
  fail "sedp check accepted factor = 200"
fi
cat "$tmp/bad.err"
grep -qF "$pipeline:$factor_line: [stage boost] factor: expected a number from 0 to 100, got '200'" "$tmp/bad.err" ||
  fail "unexpected message for factor = 200"

# ---- 4. missing input columns: a clear per-item failure, other requests unaffected -----------

step "a request without the boost_column fails alone"
cp "$requests" "$tmp/with-bad.jsonl"
echo '{"id": "no-flag", "items": [{"item_id": 1}, {"item_id": 2}, {"item_id": 3}, {"item_id": 4}, {"item_id": 5}]}' >>"$tmp/with-bad.jsonl"
sedp run "$pipeline" --requests "$tmp/with-bad.jsonl" --out "$tmp/with-bad.out" --quiet ||
  fail "sedp run with a bad request failed as a whole"
(export BOOST_FACTOR=1; sedp run "$pipeline" --requests "$tmp/with-bad.jsonl" --out "$tmp/with-bad.raw" --quiet) ||
  fail "sedp run with a bad request failed as a whole"
python3 "$tmp/compare.py" "$tmp/with-bad.jsonl" "$tmp/with-bad.raw" "$tmp/with-bad.out" 1.5 no-flag ||
  fail "a failing request changed the results of the others"

# Every item of the request failed, with the stage and the column named.
cat >"$tmp/failed.py" <<'EOF'
import json
import sys

path, rid, want = sys.argv[1], sys.argv[2], sys.argv[3]
found = False
for line in open(path):
    res = json.loads(line)
    if rid and res["id"] != rid:
        continue
    found = True
    if res["status"] != "failed":
        sys.exit("%s: status %s, expected failed" % (res["id"], res["status"]))
    if want not in res.get("message", ""):
        sys.exit("%s: request message %r does not contain %r" % (res["id"], res.get("message"), want))
    for i, item in enumerate(res["items"]):
        if item["status"] != "failed" or item.get("message") != want:
            sys.exit("%s item %d: %r, expected a failed item with message %r" % (res["id"], i, item, want))
if not found:
    sys.exit("no result for %s" % rid)
EOF
grep '"no-flag"' "$tmp/with-bad.out"
python3 "$tmp/failed.py" "$tmp/with-bad.out" no-flag "stage 'boost': column 'promoted' is missing" ||
  fail "unclear failure for a missing boost_column"

step "a missing input column fails every item with a clear message"
sed 's/^column = score$/column = no_such_column/' "$pipeline" >"$ex/missing-column.pipeline"
grep -q '^column = no_such_column$' "$ex/missing-column.pipeline" || fail "could not rewrite the pipeline"
sedp run "$ex/missing-column.pipeline" --requests "$requests" --out "$tmp/missing.out" --quiet ||
  fail "sedp run with a missing column failed as a whole"
head -n 1 "$tmp/missing.out"
python3 "$tmp/failed.py" "$tmp/missing.out" "" "stage 'boost': column 'no_such_column' is missing" ||
  fail "unclear failure for a missing input column"

# ---- 5. build against an installed copy -----------------------------------------------------

step "build against 'meson install --destdir'"
dest="$tmp/destdir"
"$MESON" install -C "$BUILD" --no-rebuild --quiet --destdir "$dest" >"$tmp/install.log" 2>&1 || {
  cat "$tmp/install.log"
  fail "meson install --destdir failed"
}
pc=$(find "$dest" -name sedp.pc | head -n 1)
[ -n "$pc" ] || fail "meson install did not install sedp.pc"
prefix=$(sed -n 's/^prefix=//p' "$pc")
# Relocate the .pc into the staging folder (only sedp's own prefix, not glib's).
mkdir "$tmp/pc"
sed "s|^prefix=.*|prefix=$dest$prefix|" "$pc" >"$tmp/pc/sedp.pc"
installed_pkg_config () {
  PKG_CONFIG_PATH="$tmp/pc" PKG_CONFIG_DISABLE_UNINSTALLED=1 pkg-config "$@"
}
installed_pkg_config --cflags sedp | grep -q -- "-I$dest" ||
  fail "the installed sedp.pc does not point at the installed headers: $(installed_pkg_config --cflags sedp)"
pluginsdir=$(installed_pkg_config --variable=pluginsdir sedp)
[ -n "$pluginsdir" ] || fail "the installed sedp.pc publishes no pluginsdir"
ex2="$tmp/custom_stage_installed"
copy_example "$ex2"
PKG_CONFIG_PATH="$tmp/pc" PKG_CONFIG_DISABLE_UNINSTALLED=1 make -C "$ex2" CFLAGS="-O2 -g -Werror" ||
  fail "the example does not build against the installed headers"
PKG_CONFIG_PATH="$tmp/pc" PKG_CONFIG_DISABLE_UNINSTALLED=1 make -C "$ex2" install DESTDIR="$tmp/stage" ||
  fail "make install failed"
installed="$tmp/stage$pluginsdir/score_boost.so"
[ -f "$installed" ] || fail "make install did not copy score_boost.so to DESTDIR$pluginsdir"
# A plugin given as a module path instead of a name.
sedp inspect "$installed" | grep -q "Plugin: score_boost" ||
  fail "sedp inspect cannot load the installed module by path"

echo "PASS"
