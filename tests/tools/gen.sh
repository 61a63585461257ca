#!/usr/bin/env bash
# tests/tools/gen.sh -- test gen, the registry generator
#
# .design: design/registry.txt .gen.errors
#
# Run from the repository root.  Prints "ok NAME" or "FAIL NAME: why"
# per case and ends with "N passed, N failed"; exits 1 on any failure.
#
# Bad registries: every tests/data/gen/*.h is a copy of one small valid
# registry with a defect, named for the error gen must report.  Its
# first lines say what to expect and how to run:
#   /* expect: LINE: SUBSTRING */, one line per error, in order:
#           gen must exit 1 and print exactly these lines on stderr,
#           each starting "tests/data/gen/NAME.h:LINE: " and containing
#           SUBSTRING (gen reports every error in a file)
#   then /* core */ to run with --core eventdef.h (the client is merged
#           with telltale's registry), anything else to run alone
# and no Python traceback may appear.
#
# Also: the valid registries generate; output is deterministic, says DO
# NOT EDIT and has no timestamp; --help and bad usage; the generated
# header compiles, while an emitter of the wrong format, or of a format
# no event has, fails to compile naming the event's format (.gen.check),
# under gcc and clang; strings with C escapes, "*/" and odd file names
# compile; kinds merge; events named like runtime types compile; the
# registries are valid C (tests/data/gen/registry.c); --with takes a shipped
# registry by name (--with malloc); the golden outputs
# (tests/data/gen/expect/) match; telltale's codes are asserted (.gen.assert);
# /dev/zero and a failed write are clean errors; strings longer than a
# stream header carries are refused; gen's type letters are
# eventdecode.c's (letters-agree).
#
# GEN=FILE tests another generator (an older gen, to see a test fail).
set -u
. tests/lib/results.sh

PYTHON=${PYTHON:-python3}
CORE=eventdef.h
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# gen_run ARGS... -- run gen; leaves $rc, $tmp/out and $tmp/err
gen_run() {
  $PYTHON ${GEN:-gen} "$@" >"$tmp/out" 2>"$tmp/err"
  rc=$?
}

# check_errors NAME FILE EXPECT GEN-ARGS... -- gen must reject, printing
# one line per line of EXPECT ("LINE SUBSTRING"), each naming FILE
check_errors() {
  local name=$1 file=$2 expect=$3
  shift 3
  gen_run --out "$tmp/bad" "$@"
  local want got
  want=$(printf '%s\n' "$expect" | wc -l)
  got=$(wc -l <"$tmp/err")
  if grep -q Traceback "$tmp/err" "$tmp/out"; then
    fail "$name" "Python traceback: $(tail -n 1 "$tmp/err")"
    return
  elif [ "$rc" -ne 1 ]; then
    fail "$name" "exit status $rc, not 1: $(head -n 1 "$tmp/err")"
    return
  elif [ "$got" -ne "$want" ]; then
    fail "$name" "$got lines on stderr, not $want: $(head -n 1 "$tmp/err")"
    return
  fi
  local n=0 line sub actual
  while read -r line sub; do
    n=$((n + 1))
    actual=$(sed -n "${n}p" "$tmp/err")
    if [ "${actual#"$file:$line: "}" = "$actual" ]; then
      fail "$name" "expected '$file:$line: ...', got: $actual"
      return
    elif [[ "$actual" != *"$sub"* ]]; then
      fail "$name" "expected '$sub' in: $actual"
      return
    fi
  done <<<"$expect"
  ok "$name"
}
check_error() {   # check_error NAME FILE LINE SUBSTRING GEN-ARGS...
  local name=$1 file=$2 expect="$3 $4"
  shift 4
  check_errors "$name" "$file" "$expect" "$@"
}

# Bad registries, one error each.
count=0
for file in tests/data/gen/*.h; do
  count=$((count + 1))
  name=gen/$(basename "$file" .h)
  expect=$(sed -n '/^\/\* expect: /!q; s|^/\* expect: \([0-9][0-9]*\): \(.*\) \*/$|\1 \2|p' "$file")
  if [ -z "$expect" ]; then
    fail "$name" "line 1 is not /* expect: LINE: SUBSTRING */"
    continue
  fi
  core=()
  [ "$(sed -n "$(($(printf '%s\n' "$expect" | wc -l) + 1))p" "$file")" = "/* core */" ] &&
    core=(--core "$CORE")
  check_errors "$name" "$file" "$expect" "${core[@]+"${core[@]}"}" "$file"
done
[ "$count" -ge 30 ] && ok "gen/count" || fail "gen/count" "only $count files in tests/data/gen"

# A registry that does not exist, as the client and as the core.
check_error gen/missing-file tests/data/gen/no-such-file.h 0 "cannot read registry" \
  tests/data/gen/no-such-file.h
check_error gen/missing-core tests/data/gen/no-such-core.h 0 "cannot read registry" \
  --core tests/data/gen/no-such-core.h examples/pool/eventdef.h

# Strings longer than a stream header's 16-bit lengths carry (.gen.limits):
# a registry name and a doc of 65536 bytes, made here rather than kept.
$PYTHON -c '
import sys
long = "x" * 65536
text = open("tests/data/gen/good/small.h").read()
text = text.replace("EVENT_REGISTRY_NAME \"small\"", "EVENT_REGISTRY_NAME \"%s\"" % long)
sys.stdout.write(text.replace("DOC(SmallNone, \"no parameters\")", "DOC(SmallNone, \"%s\")" % long))
' >"$tmp/too-long.h"
check_errors gen/string-too-long "$tmp/too-long.h" \
  "$(grep -n '^#define EVENT_REGISTRY_NAME' "$tmp/too-long.h" | cut -d: -f1) string of 65536 bytes is longer than the 65535 a stream header can carry
$(grep -n 'DOC(SmallNone' "$tmp/too-long.h" | cut -d: -f1) string of 65536 bytes is longer than the 65535" \
  --core "$CORE" "$tmp/too-long.h"

# Valid registries generate, deterministically: each is generated into
# NAME.a, then a second later into NAME.b (a timestamp would differ).
# build.ninja's commands.
# What gen's output says at its top.  Spelt in two pieces so that this
# script is not itself taken for generated output.
generated_marker="DO NOT"" EDIT"

generate() {   # generate NAME DIR REGISTRY [ARGS...]
  local name=$1 dir=$2 reg=$3
  shift 3
  gen_run "$@" --out "$dir" "$reg"
  if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ] || [ -s "$tmp/out" ]; then
    fail "valid/$name" "exit status $rc: $(head -n 1 "$tmp/err")"
    return 1
  fi
}
valid() {   # valid NAME REGISTRY [ARGS...]
  local name=$1 reg=$2
  shift 2
  [ -d "$tmp/$name.a" ] || return   # generate failed
  generate "$name" "$tmp/$name.b" "$reg" "$@" || return
  local f
  for f in eventgen.h eventgen.c; do
    if ! [ -s "$tmp/$name.a/$f" ]; then
      fail "valid/$name" "no $f"; return
    elif ! cmp -s "$tmp/$name.a/$f" "$tmp/$name.b/$f"; then
      fail "valid/$name" "$f differs between two runs"; return
    elif ! head -n 5 "$tmp/$name.a/$f" | grep -q "$generated_marker"; then
      fail "valid/$name" "$f does not say $generated_marker"; return
    elif grep -Eiq '[0-9]{4}-[0-9]{2}-[0-9]{2}|[0-9]{2}:[0-9]{2}:[0-9]{2}|generated (at|on)' "$tmp/$name.a/$f"; then
      fail "valid/$name" "$f has a timestamp"; return
    fi
  done
  # Running again over the same output rewrites nothing (ninja restat).
  local before
  before=$(stat -c %.9Y.%i "$tmp/$name.a/eventgen.h" "$tmp/$name.a/eventgen.c")
  gen_run "$@" --out "$tmp/$name.a" "$reg"
  if [ "$rc" -ne 0 ] ||
     [ "$(stat -c %.9Y.%i "$tmp/$name.a/eventgen.h" "$tmp/$name.a/eventgen.c")" != "$before" ]; then
    fail "valid/$name" "unchanged output was rewritten"; return
  fi
  ok "valid/$name"
}
generate core "$tmp/core.a" eventdef.h
generate pool "$tmp/pool.a" examples/pool/eventdef.h --core "$CORE" --with src/malloc/eventdef.h
generate test "$tmp/test.a" tests/lib/eventdef.h --core "$CORE"
sleep 1
valid core eventdef.h
valid pool examples/pool/eventdef.h --core "$CORE" --with src/malloc/eventdef.h
valid test tests/lib/eventdef.h --core "$CORE"
generate malloc "$tmp/malloc.a" src/malloc/eventdef.h --core "$CORE"

# --with NAME is the registry that ships as src/NAME/eventdef.h
# (.pack.gen): the same output as its path gives.
if generate with-name "$tmp/with-name" examples/pool/eventdef.h --core "$CORE" --with malloc; then
  if diff -r "$tmp/pool.a" "$tmp/with-name" >/dev/null; then
    ok valid/with-name
  else
    fail valid/with-name "--with malloc differs from --with src/malloc/eventdef.h"
  fi
fi

# A client registry without telltale's own events, generated alone,
# would write logs that cannot be read: gen refuses it.
check_error gen/no-core examples/pool/eventdef.h 1 "a client registry needs gen --core" \
  examples/pool/eventdef.h

# A client may declare a standard kind it uses: it merges with
# telltale's, at telltale's index (Pool is 2), and is listed once.
if generate kind-merge "$tmp/merge" tests/data/gen/good/kind-merge.h --core "$CORE"; then
  if [ "$(grep -c '"Pool"' "$tmp/merge/eventgen.c")" -ne 1 ]; then
    fail valid/kind-merge "Pool is not in the kind table once"
  elif ! grep -q 'EventKindPool = 2,' "$tmp/merge/eventgen.h" ||
       ! grep -q 'EVENT_KIND_OF_Beta EventKindPool$\|.kind = EventKindPool' "$tmp/merge/eventgen.c" "$tmp/merge/eventgen.h"; then
    fail valid/kind-merge "Beta is not of kind Pool (2)"
  else
    ok valid/kind-merge
  fi
fi

# Usage.
usage() {   # usage NAME STATUS ARGS...
  local name=$1 status=$2
  shift 2
  gen_run "$@"
  if grep -q Traceback "$tmp/err"; then
    fail "$name" "Python traceback"
  elif [ "$rc" -ne "$status" ]; then
    fail "$name" "exit status $rc, not $status"
  elif [ "$status" -eq 0 ] && ! grep -q "usage: telltale-gen" "$tmp/out"; then
    fail "$name" "no usage on stdout"
  elif [ "$status" -eq 2 ] && ! grep -q "usage: telltale-gen" "$tmp/err"; then
    fail "$name" "no usage on stderr"
  else
    ok "$name"
  fi
}
usage usage/help 0 --help
usage usage/h 0 -h
usage usage/none 2
usage usage/no-out 2 eventdef.h
usage usage/out-no-arg 2 eventdef.h --out
usage usage/core-no-arg 2 --out "$tmp/u" eventdef.h --core
usage usage/unknown-option 2 --frobnicate --out "$tmp/u" eventdef.h
usage usage/two-registries 2 --out "$tmp/u" eventdef.h tests/lib/eventdef.h
usage usage/with-no-core 2 --out "$tmp/u" --with src/malloc/eventdef.h tests/lib/eventdef.h
usage usage/with-no-arg 2 --out "$tmp/u" --core eventdef.h tests/lib/eventdef.h --with

# The generated header compiles, and a wrong format does not, naming
# the event.  The pool example's registry: PoolAlloc is PAW.
emit() {   # emit FILE CALL
  printf '#include <telltale/event.h>\nvoid f(void *p);\nvoid f(void *p) { %s; }\n' "$2" >"$1"
}
emit "$tmp/right.c" 'EVENT_PAW(PoolAlloc, p, 1, 2)'
emit "$tmp/wrong.c" 'EVENT_PW(PoolAlloc, p, 1)'
emit "$tmp/unused.c" 'EVENT_PP(PoolAlloc, p, p)'   # no event has PP
for cc in gcc clang; do
  if ! command -v "$cc" >/dev/null; then
    fail "compile/$cc" "no $cc"
    continue
  fi
  for variety in 0 1 2; do
    flags=(-std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
           -fsyntax-only -DEVENT_VARIETY=$variety -Ibuild/include -Isrc/event -Isrc/plinth -I"$tmp/pool.a")
    if "$cc" "${flags[@]}" "$tmp/right.c" >"$tmp/cc" 2>&1; then
      ok "compile/$cc/variety$variety/right"
    else
      fail "compile/$cc/variety$variety/right" "$(grep -m 1 error "$tmp/cc")"
    fi
    if "$cc" "${flags[@]}" "$tmp/wrong.c" >"$tmp/cc" 2>&1; then
      fail "compile/$cc/variety$variety/wrong" "EVENT_PW(PoolAlloc, ...) compiled"
    elif ! grep error "$tmp/cc" | grep -q "PoolAlloc has format PAW"; then
      fail "compile/$cc/variety$variety/wrong" "no error names PoolAlloc's format: $(grep -m 1 error "$tmp/cc")"
    else
      ok "compile/$cc/variety$variety/wrong"
    fi
    if "$cc" "${flags[@]}" "$tmp/unused.c" >"$tmp/cc" 2>&1; then
      fail "compile/$cc/variety$variety/unused" "EVENT_PP(PoolAlloc, ...) compiled"
    elif ! grep error "$tmp/cc" | grep -q "PoolAlloc has format PAW"; then
      fail "compile/$cc/variety$variety/unused" "no error names PoolAlloc's format: $(grep -m 1 error "$tmp/cc")"
    else
      ok "compile/$cc/variety$variety/unused"
    fi
  done
done

# Registry text that would end or nest a C comment in eventgen.h
# compiles; a garbled old eventgen.h is replaced.
sed -e 's|"the object"|"the object */ or /* its base"|' \
    -e 's|^#define EVENT_REGISTRY_NAME .*|#define EVENT_REGISTRY_NAME "pool */ example"|' \
    examples/pool/eventdef.h >"$tmp/comment.h"
mkdir -p "$tmp/comment"
printf '\377garbage\n' >"$tmp/comment/eventgen.h"
if ! generate comment-text "$tmp/comment" "$tmp/comment.h" --core "$CORE" --with src/malloc/eventdef.h; then
  :
elif ! gcc -std=c11 -Wall -Wextra -Werror -fsyntax-only -Ibuild/include -Isrc/event -Isrc/plinth \
       -I"$tmp/comment" "$tmp/right.c" >"$tmp/cc" 2>&1; then
  fail valid/comment-text "$(grep -m 1 error "$tmp/cc")"
else
  ok valid/comment-text
fi

# Registry strings are C (.reg.file): every C escape is read and written
# back so that the generated C compiles; a trigraph (-std=c11 reads them)
# and a file name that is not UTF-8 or holds "*/" are escaped too.
# compiles REGISTRY-DIR NAME -- eventgen.c and a use of the header compile
compiles() {
  local dir=$1 name=$2 cc
  for cc in gcc clang; do
    command -v "$cc" >/dev/null || continue
    if ! "$cc" -std=c11 -Wall -Wextra -Werror -fsyntax-only -Ibuild/include -Isrc/event -Isrc/plinth \
         -I"$dir" "$dir/eventgen.c" "$tmp/right.c" >"$tmp/cc" 2>&1; then
      fail "$name" "$cc: $(grep -m 1 error "$tmp/cc")"
      return 1
    fi
  done
}
odd=$(printf '%s/odd-\377-*/name.h' "$tmp")
mkdir -p "${odd%/*}"
sed -e 's|"the object"|"tab\\there, \\x41\\101\\u00e9, \\"quoted\\", what??/ \\?\\?= \\a\\b\\f\\n\\r\\v\\\\"|' \
    examples/pool/eventdef.h >"$odd"
if generate odd-strings "$tmp/odd" "$odd" --core "$CORE" --with src/malloc/eventdef.h &&
   compiles "$tmp/odd" valid/odd-strings; then
  want='tab\011here, AA'$'\303\251'', \"quoted\", what\?\?/ \?\?= \007\010\014\012\015\013\\",' 
  if ! grep -qF "$want" "$tmp/odd/eventgen.c"; then
    fail valid/odd-strings "the doc is not as expected: $(grep -m 1 'tab' "$tmp/odd/eventgen.c")"
  elif ls "$tmp/odd" | grep -q tmp; then
    fail valid/odd-strings "a temporary file was left behind"
  else
    ok valid/odd-strings
  fi
fi

# Every registry in the tree is valid C, as eventdef.h says (.reg.file):
# tests/data/gen/registry.c expands its lists.
for reg in eventdef.h src/malloc/eventdef.h examples/pool/eventdef.h tests/lib/eventdef.h \
           tests/clients/trust/eventdef.h tests/data/gen/good/*.h; do
  for cc in gcc clang; do
    command -v "$cc" >/dev/null || continue
    if "$cc" -std=c11 -Wall -Wextra -Werror -Wpedantic -fsyntax-only -I. -DREGISTRY="\"$reg\"" \
         tests/data/gen/registry.c >"$tmp/cc" 2>&1; then
      ok "c/$cc/$reg"
    else
      fail "c/$cc/$reg" "$(grep -m 1 error "$tmp/cc")"
    fi
  done
done

# Golden outputs: the small registry generates exactly the files kept in
# tests/data/gen/expect/ (tests/data/gen/good/small.h says how to renew them), but
# for the banner line that forbids editing, which an expectation does not
# carry (it is edited, deliberately, when gen changes), and they compile.
if generate golden "$tmp/golden" tests/data/gen/good/small.h --core "$CORE"; then
  : >"$tmp/diff"
  for f in eventgen.h eventgen.c eventgen.py; do
    grep -q '^ \* Generated by gen .*  DO NOT ED[I]T\.$\|^# Generated by gen .*  DO NOT ED[I]T\.$' "$tmp/golden/$f" ||
      echo "+$f lacks gen's banner" >>"$tmp/diff"
    grep -v 'Generated by gen' "$tmp/golden/$f" | diff -u "tests/data/gen/expect/$f.expect" - >>"$tmp/diff"
  done
  if [ -s "$tmp/diff" ]; then
    fail golden "output differs from tests/data/gen/expect/: $(grep -m 1 '^[-+][^-+]' "$tmp/diff")"
  elif ! gcc -std=c11 -Wall -Wextra -Werror -fsyntax-only -Ibuild/include -Isrc/event -Isrc/plinth \
         -I"$tmp/golden" "$tmp/golden/eventgen.c" >"$tmp/cc" 2>&1; then
    fail golden "$(grep -m 1 error "$tmp/cc")"
  else
    ok golden
  fi
fi

# The type letters: gen's table (as eventgen.py carries it) and the C
# one (eventdecode.c EventTypes) state the same facts, and EventTypeOf
# knows exactly those letters.  design/registry.txt .gen.letters
cat >"$tmp/letters.c" <<'EOF'
#include <stdio.h>
#include "eventdecode.h"
int main(void)
{
  static const char *const form[] = {"unsigned", "double", "string"};
  for (int c = 0; c < 256; ++c) {
    const EventTypeStruct *t = EventTypeOf(c);
    char size[16];
    if (t == NULL)
      continue;
    if (t->size == EVENT_TYPE_POINTER) snprintf(size, sizeof size, "pointer");
    else if (t->size == EVENT_TYPE_WORD) snprintf(size, sizeof size, "word");
    else snprintf(size, sizeof size, "%u", t->size);
    printf("%c %s %s %s %u %u %u %s\n", t->letter, t->ctype, size, form[t->form], t->hex, t->key,
           t->value, t->name);
  }
  return 0;
}
EOF
if [ ! -f "$tmp/golden/eventgen.py" ]; then
  fail letters-agree "gen wrote no eventgen.py"
elif ! gcc -std=c11 -Wall -Wextra -Werror -Isrc/event -Isrc/decode -Ibuild/include \
       "$tmp/letters.c" src/decode/eventdecode.c -o "$tmp/letters" >"$tmp/cc" 2>&1; then
  fail letters-agree "$(grep -m 1 error "$tmp/cc")"
else
  "$tmp/letters" | sort >"$tmp/letters.c.out"
  $PYTHON -c 'import sys; sys.path.insert(0, sys.argv[1]); import eventgen
for l, t in sorted(eventgen.LETTERS.items()):
    print(l, t["ctype"], t["size"], t["form"], t["hex"], t["key"], t["value"], t["name"])' "$tmp/golden" >"$tmp/letters.py.out"
  if ! diff -u "$tmp/letters.py.out" "$tmp/letters.c.out" >"$tmp/diff" 2>&1; then
    fail letters-agree "gen's LETTER_TABLE and eventdecode.c's EventTypes differ: $(grep -m 1 '^[-+][^-+]' "$tmp/diff")"
  else
    ok letters-agree
  fi
fi

# telltale's own codes are asserted against eventcom.h's in eventgen.c:
# a registry that moves StreamEnd generates, but does not compile.
sed 's/StreamEnd    , 0x0002,/StreamEnd    , 0x00F0,/' eventdef.h >"$tmp/moved.h"
if ! grep -q 0x00F0 "$tmp/moved.h"; then
  fail compile/core-codes "eventdef.h's StreamEnd row has changed"
elif generate core-codes "$tmp/moved" "$tmp/moved.h"; then
  if gcc -std=c11 -fsyntax-only -Ibuild/include -Isrc/event -Isrc/plinth -I"$tmp/moved" "$tmp/moved/eventgen.c" \
       >"$tmp/cc" 2>&1; then
    fail compile/core-codes "a moved StreamEnd compiled"
  elif ! grep -q "StreamEnd is EVENT_CODE_STREAM_END" "$tmp/cc"; then
    fail compile/core-codes "no error names StreamEnd: $(grep -m 1 error "$tmp/cc")"
  else
    ok compile/core-codes
  fi
fi

# Events named like telltale's own types compile beside eventread.h.
printf '#include <telltale/event.h>\n#include "eventread.h"\nvoid f(void);\nvoid f(void) { EVENT_W(Layout, 1); EVENT_WS(Registry, 2, "s"); }\n' >"$tmp/names.c"
if generate reader-names "$tmp/names" tests/data/gen/good/reader-names.h --core "$CORE"; then
  if gcc -std=c11 -Wall -Wextra -Werror -fsyntax-only -Ibuild/include -Isrc/event -Isrc/decode -Isrc/read -Isrc/plinth -I"$tmp/names" \
       "$tmp/names/eventgen.c" "$tmp/names.c" >"$tmp/cc" 2>&1; then
    ok valid/reader-names
  else
    fail valid/reader-names "$(grep -m 1 error "$tmp/cc")"
  fi
fi

# No kind may be named so that EventKind<Kind> is one of telltale's own
# names: gen's RESERVED_KINDS must list every such name in the sources.
# No hand-written name takes the form of an event's generated names.
reserved=$(sed -n 's/^RESERVED_KINDS = {\(.*\)}$/\1/p' "${GEN:-gen}" | tr -d '"' | tr -d ' ' | tr , '\n')
kinds=$(sed -n 's/^ *KIND(\([A-Za-z0-9_]*\),.*/\1/p' eventdef.h src/malloc/eventdef.h)
events=$(sed -n 's/^ *\(RELATION\|RETIRED\)( *\([A-Za-z0-9_]*\) *,.*/\2/p' eventdef.h src/malloc/eventdef.h)
missing=
for name in $(grep -rhoE '\bEventKind[A-Z][A-Za-z0-9_]*' src tools | sort -u); do
  printf '%s\n' $reserved $kinds | grep -qx "${name#EventKind}" || missing="$missing $name"
done
for name in $(grep -rhoE '\bEvent(Code|Struct|Emit|Check)[A-Z][A-Za-z0-9_]*' src tools | sort -u); do
  suffix=$(printf '%s' "$name" | sed -E 's/^Event(Code|Struct|Emit|Check)//')
  printf '%s\n' $events | grep -qx "$suffix" || missing="$missing $name"
done
if [ -n "$missing" ]; then
  fail gen/reserved-names "names an event or kind could clash with:$missing"
else
  ok gen/reserved-names
fi

# A NUL byte in a registry (made here: a committed file with one would be
# binary to grep).
sed 's/alpha happened/alpha\x00 happened/' tests/data/gen/good/kind-merge.h >"$tmp/nul.h"
check_error gen/nul-byte "$tmp/nul.h" 19 "a NUL byte" --core "$CORE" "$tmp/nul.h"

# An error names a file whose name is not UTF-8 by its own bytes.
check_error gen/odd-name-error "${odd%.h}-missing.h" 0 "cannot read registry" \
  --core "$CORE" "${odd%.h}-missing.h"

# A file that is not regular (/dev/zero would never end) is refused at
# once, and a failed write leaves no temporary file behind.
if ! command -v timeout >/dev/null; then
  fail gen/dev-zero "no timeout"
else
  PYTHON="timeout 10 $PYTHON" check_error gen/dev-zero /dev/zero 0 "not a regular file" \
    --core "$CORE" /dev/zero
fi
mkdir -p "$tmp/unwritable/eventgen.c"
gen_run --core "$CORE" --out "$tmp/unwritable" tests/lib/eventdef.h
if [ "$rc" -ne 1 ] || grep -q Traceback "$tmp/err"; then
  fail gen/write-fails "exit status $rc: $(tail -n 1 "$tmp/err")"
elif ls "$tmp/unwritable" | grep -q tmp; then
  fail gen/write-fails "a temporary file was left behind: $(ls "$tmp/unwritable")"
else
  ok gen/write-fails
fi

finish
