#!/usr/bin/env bash
# tests/tools/fuzz.sh -- the reader under libFuzzer: the corpus, the findings, a bounded run
#
# .design: design/tests.txt .test.fuzz
#
# Usage: tests/tools/fuzz.sh [SECONDS]      SECONDS of fuzzing, default 60
#                                     (or FUZZ_TIME); 0: replay only
#
# Builds build/fuzz/fuzz_stream (ninja fuzz) if needed, then
#   replay   runs every input of tests/data/fuzz/corpus and tests/data/fuzz/findings
#            once: each must pass (a finding that still fails is an open
#            bug, named with its line from tests/data/fuzz/findings/README);
#   fuzz     fuzzes from the corpus for SECONDS under AddressSanitizer and
#            UndefinedBehaviorSanitizer, in libFuzzer's fork mode so that
#            one finding does not end the run: any crash, sanitizer
#            report, leak, out-of-memory (2 GiB of RSS, a malloc above
#            80 MiB, or a heap above FUZZ_HEAP_MAX) or input that runs 5 s
#            (a hang) is a finding.  The random seed is printed;
#            FUZZ_SEED=N repeats a run.
# Each finding is printed as "FINDING FILE: what, where [entry]", and
# the run's are kept in build/fuzz/findings/ to reproduce with
#   build/fuzz/fuzz_stream -timeout=5 FILE
# Prints "ok NAME" or "FAIL NAME: why" per step, then "N passed, N failed".

set -u
cd "$(dirname "$0")/../.."
. tests/lib/results.sh
seconds=${1:-${FUZZ_TIME:-60}}
fuzzer=build/fuzz/fuzz_stream
opts=(-timeout=5 -rss_limit_mb=2048 -malloc_limit_mb=80)

if ! ninja build/fuzz/.all >/dev/null; then
  fail build "ninja fuzz failed (clang with -fsanitize=fuzzer: .ci/install)"
  finish
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# describe FILE OUTPUT STATUS -- one line: what the fuzzer reported for
# FILE, where in the reader (the innermost and the outermost frame in
# src/ with a line), and through which entry (fuzz_stream.c).
# The part before " [in" is the same for the same fault in the same
# place: tests/tools/fuzz.sh compares it to say which findings are known.
describe() {
  local file=$1 out=$2 what frames inner outer entry
  what=$(grep -m1 -oE 'promise broken: .*' "$out")
  [ -n "$what" ] ||
    what=$(grep -m1 -E '^SUMMARY: ' "$out" | sed -E 's/^SUMMARY: //; s/ \/[^ ]*\/(src|tests)\// \1\//')
  [ -n "$what" ] || what=$(grep -m1 -E 'ERROR|ALARM' "$out")
  [ -n "$what" ] || what="exit status $3, no report"
  frames=$(grep -oE ' in [A-Za-z0-9_]+ [^ ]*src/(decode|read)/[a-z]+\.c:[0-9]+' "$out" |
    sed -E 's/^ in //; s/ [^ ]*(src\/)/ \1/')
  inner=$(head -1 <<<"$frames")
  outer=$(tail -1 <<<"$frames")
  case $(( $(od -An -tu1 -N1 "$file") % 4 )) in
    0) entry=open ;; 1) entry=scan ;; 2) entry=recover ;; *) entry=event ;;
  esac
  echo "${what}${outer:+, from $outer} [${inner:+in $inner, }entry $entry]"
}

# replay DIR -- each input of DIR once, one by one to name each that
# fails (the corpus first all in one process, which is quicker).  The description of
# each is kept in seen[], to say which of the run's findings are known.
declare -A seen
replay() {
  local dir=$1 f bad=0 known status what files=()
  for f in "$dir"/*; do
    [ -f "$f" ] && [ "$(basename "$f")" != README ] && files+=("$f")
  done
  [ ${#files[@]} -gt 0 ] || return 0
  if [ "$dir" = tests/data/fuzz/corpus ] && "$fuzzer" "${opts[@]}" "${files[@]}" >"$tmp/out" 2>&1; then
    return 0
  fi
  for f in "${files[@]}"; do
    "$fuzzer" "${opts[@]}" "$f" >"$tmp/out" 2>&1
    status=$?
    if [ $status -ne 0 ]; then
      what=$(describe "$f" "$tmp/out" $status)
      echo "FINDING $f: $what"
      seen[${what% \[in*}]=$f
      known=$(grep -m1 "^$(basename "$f"): " "$dir/README" 2>/dev/null)
      [ -n "$known" ] && echo "  known: $known"
      bad=$((bad + 1))
    fi
  done
  [ $bad -eq 0 ]
}

start=$SECONDS
if replay tests/data/fuzz/corpus; then
  ok "replay corpus ($(ls tests/data/fuzz/corpus | wc -l) inputs)"
else
  fail "replay corpus" "inputs of the seed corpus fail (above)"
fi
if replay tests/data/fuzz/findings; then
  ok "replay findings"
else
  fail "replay findings" "recorded findings still fail: open bugs (above, and tests/data/fuzz/findings/README)"
fi
[ "$seconds" -gt 0 ] || finish

# The run, from a copy of the corpus (libFuzzer adds to it), in fork
# mode with every kind of finding kept and the run going on.
mkdir -p "$tmp/corpus" "$tmp/artifacts" build/fuzz/findings
cp tests/data/fuzz/corpus/* "$tmp/corpus/"
seed=${FUZZ_SEED:-$(( (RANDOM << 15 | RANDOM) + 1 ))}
echo "fuzzing for $seconds s, seed $seed (FUZZ_SEED=$seed tests/tools/fuzz.sh repeats it)"
TMPDIR=$tmp "$fuzzer" "${opts[@]}" -seed="$seed" -max_total_time="$seconds" -fork=1 \
  -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1 -dict=tests/data/fuzz/fuzz_stream.dict \
  -artifact_prefix="$tmp/artifacts/" \
  "$tmp/corpus" >"$tmp/run.out" 2>&1
status=$?
runs=$(grep -oE '^#[0-9]+' "$tmp/run.out" | tail -1 | tr -d '#')
found=0
for f in "$tmp/artifacts"/*; do
  [ -f "$f" ] || continue
  found=$((found + 1))
  cp "$f" build/fuzz/findings/
  f=build/fuzz/findings/$(basename "$f")
  "$fuzzer" "${opts[@]}" "$f" >"$tmp/out" 2>&1
  what=$(describe "$f" "$tmp/out" $?)
  echo "FINDING $f: $what"
  [ -n "${seen[${what% \[in*}]:-}" ] && echo "  known: the same failure, from the same place, as ${seen[${what% \[in*}]}"
done
if [ $found -gt 0 ]; then
  fail "fuzz ${seconds}s" "$found finding(s) in ${runs:-?} runs (above; kept in build/fuzz/findings/)"
elif ! grep -q 'INFO: fuzzed for' "$tmp/run.out" || [ -z "$runs" ]; then
  fail "fuzz ${seconds}s" "libFuzzer did not run (exit status $status):"
  tail -5 "$tmp/run.out"
else
  ok "fuzz ${seconds}s ($runs runs, no finding)"
fi
echo "fuzz.sh took $((SECONDS - start)) s"
finish
