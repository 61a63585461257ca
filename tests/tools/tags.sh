#!/usr/bin/env bash
# tests/tools/tags.sh -- every design tag the code cites exists, once, in the
# document the citation names.
#
# The design is design/*.txt, one document a topic; the code cites it
# by document and tag ("design/DOC.txt .tag", or a list of tags, each
# of the last document named before it).  A tag is a line of a
# document that starts with ".name.name:".  Checked, in the sources,
# scripts, build files, bench and tests:
#   - every tag is defined once across all the documents, so that a
#     citation cannot be ambiguous;
#   - every cited tag is defined somewhere ("(MPS .tag ...)" cites the
#     Memory Pool System's design, not ours);
#   - every citation names the document that defines its tag; in a
#     list, a tag without a document of its own is the last named one's.
# Prints "ok tags" or "FAIL tags: ..." and "N passed, N failed".
set -u
cd "$(dirname "$0")/../.."
prefixes='sol|req|reg|stream|gen|plinth|eventcnv|export|build|bench|malloc|replay|gdb|test|intro|readership|pack|compact|heap|stacks|tools|ctl|zstd'
tag='\.[a-z0-9]+(\.[a-z0-9]+)*'
# "design/DOC .tag", one line a definition, every document.
defs=$(for f in design/*.txt; do
         grep -oE "^$tag:" "$f" | tr -d ':' | sed "s|^|$f |"
       done)
tags=$(echo "$defs" | cut -d' ' -f2 | sort -u)
# (The fuzz corpus and findings are binary: grep would print only
# "binary file matches" for the whole stream.)
files() {
  git ls-files -- '*.c' '*.h' '*.py' '*.sh' '*.ninja' gen build.ninja .ci bench tests tools src examples \
      ':!tests/data/fuzz/corpus' ':!tests/data/fuzz/findings' | sort -u
}
text=$(files | xargs cat 2>/dev/null | tr -d '\000' | sed -E 's/\(MPS [^)]*\)//g')
failed=""
# A tag is defined once: a second definition (or a wrapped line that
# starts with a tag and a colon) would make its citations ambiguous.
twice=$(echo "$defs" | cut -d' ' -f2 | sort | uniq -d)
if [ -n "$twice" ]; then
  failed=1
  echo "FAIL tags: defined more than once in design/*.txt:"
  for t in $twice; do
    echo "  $t: $(grep -nE "^\\$t:" design/*.txt | cut -d: -f1,2 | tr '\n' ' ')"
  done
fi
missing=$(echo "$text" | grep -a -oE "(^|[ (])\.($prefixes)(\.[a-z0-9]+)*" |
  sed 's/^[ (]//' | sort -u | comm -23 - <(echo "$tags"))
if [ -n "$missing" ]; then
  failed=1
  echo "FAIL tags: cited in the code but defined in no design/*.txt:"
  for t in $missing; do
    echo "  $t: $(git grep -n -- "$t" -- ':!design' | head -3 | tr '\n' ' ')"
  done
fi
# Each citation as "design/DOC .tag", the list's document carried on;
# a citation's first tag may be on the next line, after a comment's
# leader.
cited=$(echo "$text" | sed -E ':a; /design\/[a-z0-9_-]+\.txt$/ { N; s/\n[ \t]*(\*|#|\/\/)?[ \t]*/ /; ba; }' |
  grep -a -oE "design/[a-z0-9_-]+\.txt((, ?| )$tag)+" |
  awk '{ n = split($0, a, /(, ?| )/); for (i = 2; i <= n; i++) print a[1], a[i] }' | sort -u)
wrong=$(comm -23 <(echo "$cited" | grep -E " \.($prefixes)(\.|$)") <(echo "$defs" | sort -u))
if [ -n "$wrong" ]; then
  failed=1
  echo "FAIL tags: cited in a document that does not define them:"
  echo "$wrong" | while read -r doc t; do
    home=$(echo "$defs" | awk -v t="$t" '$2 == t { print $1 }')
    echo "  $doc $t (defined in ${home:-no document}): $(git grep -n -F -- "$doc $t" -- ':!design' | head -2 | tr '\n' ' ')"
  done
fi
if [ -z "$failed" ]; then
  echo "ok tags"
  echo "1 passed, 0 failed"
else
  echo "0 passed, 1 failed"
  exit 1
fi
