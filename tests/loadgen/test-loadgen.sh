#!/usr/bin/env sh
# (env first: under the valgrind test setup, valgrind then checks env, not the shell.)
# sedp bench: a short closed-loop run against `sedp serve` (JSON and protobuf), an open-loop one and
# a staircase, and one in process; checks the RESULT lines (requests > 0, errors = 0) and the
# argument errors.
# Usage: test-loadgen.sh SEDP_BINARY   (SEDP_PLUGIN_PATH set by meson)
set -eu
sedp=$1
tmp=$(mktemp -d)
server=
cleanup() {
  if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() { echo "FAIL: $*" >&2; exit 1; }

cat > "$tmp/small.pipeline" <<'P'
[pipeline]
name = small
deadline_ms = 2000
frame_rows = 8
outputs = item_id, score

[stage reader]
plugin = data_reader

[stage work]
plugin = synthetic_work
after = reader
spin_us = 1
output = score
P
cat > "$tmp/requests.jsonl" <<'R'
{"request_id": "a", "user": {"id": 1, "features": {"age": {"int_value": 31}, "clicked": {"ids": [17, 3]}}}, "items": [{"id": 10, "escore": 0.5, "features": {"ctr": {"float_value": 0.25}}}, {"id": 11, "escore": 0.25, "features": {"ctr": 0.5}}, {"id": 12, "features": {"ctr": 0.125, "cat": "x"}}]}

{"user": {"id": 2}, "items": [{"id": 20}, {"id": 21}, {"id": 22}, {"id": 23}, {"id": 24}, {"id": 25}, {"id": 26}, {"id": 27}, {"id": 28}, {"id": 29}]}
R

# check_results FILE: requests_per_s > 0, items_per_s > 0, the percentiles, errors = 0.
check_results() {
  cat "$1"
  grep -q '^RESULT requests_per_s=' "$1" || fail "no requests_per_s in $1"
  awk -F= '/^RESULT requests_per_s=/ { if ($2 + 0 <= 0) exit 1 }' "$1" || fail "no requests completed"
  awk -F= '/^RESULT items_per_s=/ { if ($2 + 0 <= 0) exit 1 }' "$1" || fail "no items completed"
  grep -q '^RESULT p50_ms=[0-9.]* p90_ms=[0-9.]* p99_ms=[0-9.]* p999_ms=[0-9.]*$' "$1" || fail "no percentiles"
  grep -q '^RESULT errors=0$' "$1" || fail "errors reported"
}

"$sedp" serve "$tmp/small.pipeline" --listen 127.0.0.1:0 2> "$tmp/serve.log" &
server=$!
i=0
until grep -q 'listening on' "$tmp/serve.log"; do
  i=$((i + 1))
  [ $i -lt 200 ] || { cat "$tmp/serve.log" >&2; fail "the server did not start"; }
  kill -0 "$server" 2>/dev/null || { cat "$tmp/serve.log" >&2; fail "the server exited"; }
  sleep 0.05
done
base=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$tmp/serve.log")
url=$base/v1/pipelines/small:predict

"$sedp" bench "$url" --concurrency 4 --duration 1 --requests "$tmp/requests.jsonl" > "$tmp/json.out" 2> "$tmp/json.err" \
  || { cat "$tmp/json.err" >&2; fail "bench (json) exited with an error"; }
check_results "$tmp/json.out"
grep -q 'requests' "$tmp/json.err" || fail "no progress on stderr"

"$sedp" bench "$url" --concurrency 4 --duration 1 --requests "$tmp/requests.jsonl" --format protobuf \
  > "$tmp/pb.out" 2> "$tmp/pb.err" || { cat "$tmp/pb.err" >&2; fail "bench (protobuf) exited with an error"; }
check_results "$tmp/pb.out"

# The built-in request.
"$sedp" bench "$url" -c 2 -d 0.5 -q > "$tmp/builtin.out" 2>&1 || fail "bench (built-in request) failed"
check_results "$tmp/builtin.out"

# An unknown pipeline: every request is an error (404), reported, not a crash.
"$sedp" bench "$base/v1/pipelines/nope:predict" -c 2 -d 0.3 -q > "$tmp/404.out" 2>&1 || fail "bench (404) failed"
grep -q '^RESULT errors=[1-9]' "$tmp/404.out" || { cat "$tmp/404.out"; fail "404s not counted as errors"; }

# Open loop: Poisson arrivals at 200/s, the open loop's RESULT keys.
"$sedp" bench "$url" --rate 200 --duration 0.5 --requests "$tmp/requests.jsonl" --format protobuf \
  > "$tmp/open.out" 2> "$tmp/open.err" || { cat "$tmp/open.err" >&2; fail "bench --rate exited with an error"; }
check_results "$tmp/open.out"
grep -q '^RESULT rate=200.0 duration_s=0.5$' "$tmp/open.out" || fail "no rate line"
awk -F= '/^RESULT offered_rps=/ { if ($2 + 0 <= 0) exit 1 }' "$tmp/open.out" || fail "nothing offered"
grep -q '^RESULT answered_share=1.0000$' "$tmp/open.out" || fail "not every request answered"
grep -q '^RESULT late_sends=[0-9]*$' "$tmp/open.out" || fail "no late_sends"
grep -q '^RESULT status_200=[1-9]' "$tmp/open.out" || fail "no status_200 count"

# A staircase: a block of keys per step.
"$sedp" bench "$url" --rate-steps 100,300 --duration 0.3 -q > "$tmp/steps.out" 2>&1 || fail "bench --rate-steps failed"
grep -q '^RESULT steps=2$' "$tmp/steps.out" || { cat "$tmp/steps.out"; fail "no steps line"; }
grep -q '^RESULT step2_rate=300.0 step2_duration_s=0.3$' "$tmp/steps.out" || { cat "$tmp/steps.out"; fail "no step 2"; }
grep -q '^RESULT step2_errors=0$' "$tmp/steps.out" || { cat "$tmp/steps.out"; fail "step 2 had errors"; }

kill "$server"
wait "$server" || true
server=

# In process.
"$sedp" bench "$tmp/small.pipeline" --concurrency 4 --duration 1 --requests "$tmp/requests.jsonl" --format protobuf \
  > "$tmp/inproc.out" 2> "$tmp/inproc.err" || { cat "$tmp/inproc.err" >&2; fail "bench (in process) failed"; }
check_results "$tmp/inproc.out"

# Bad arguments: one clear error, exit status 2.
for args in "" "--concurrency 0 $url" "--duration -1 $url" "--format xml $url" "$url extra" "--rate 0 $url" \
  "--rate-steps 1,x $url" "--find-capacity $url"; do
  if "$sedp" bench $args > "$tmp/bad.out" 2>&1; then fail "bench $args succeeded"; else rc=$?; fi
  [ $rc -eq 2 ] || { cat "$tmp/bad.out"; fail "bench $args: exit status $rc, expected 2"; }
  grep -q '^sedp bench: ' "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "bench $args: no error message"; }
done
printf '{"items": [\n' > "$tmp/broken.jsonl"
if "$sedp" bench "$url" --requests "$tmp/broken.jsonl" > "$tmp/bad.out" 2>&1; then fail "a broken request file was accepted"; fi
grep -q 'broken.jsonl:1' "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "the error does not name the line"; }
"$sedp" bench --help | grep -q 'concurrency' || fail "--help"
echo "ok"
