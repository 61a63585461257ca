#!/usr/bin/env bash
# bench/lttng.sh -- LTTng-UST as the benchmark's peer: sets up and checks
# the session that records its cases (bench/peers.sh builds them).
#
# .design: design/tests.txt .bench.lttng
#
# LTTng-UST is optional: bench/peers.sh builds bench-peers with its
# cases where `pkg-config --exists lttng-ust`; install with
#   apt-get install liblttng-ust-dev lttng-tools
#
#   bench/lttng.sh start NAME DIR  create and start session NAME, writing
#                                  to DIR, with bench:paw enabled; status 1,
#                                  and why, without a session daemon
#   bench/lttng.sh finish NAME DIR [EMITTED]
#                                  stop and destroy the session; print the
#                                  events it recorded and discarded
#
# The channel blocks (--blocking-timeout=inf, with LTTNG_UST_ALLOW_BLOCKING=1
# in the bench's environment) rather than discarding: like telltale's log,
# nothing is lost, and when the consumer daemon falls behind, the time the
# emitter waits for it is in the figure.  Its buffers, 8 sub-buffers of
# 4 MiB per CPU, hold most of a round of a million events (about 28 MB),
# so lttng-on is the emitter's own cost: the consumer daemon writes the
# trace out on the other core, mostly after the round, which flatters
# LTTng beside telltale's enabled case (write() on the emitting thread)
# and async (the round waits for the writer).  With LTTng's default
# buffers, 4 of 512 KiB (LTTNG_SUBBUF_SIZE=512K LTTNG_NUM_SUBBUF=4
# bench/run), the emitter waits for the consumer, and on a loaded 2-core
# machine the figure is up to three times as high, and as variable.  A
# session daemon is started by bench/run where none runs; by hand:
# `lttng-sessiond --daemonize` before bench/run.
set -eu
cd "$(dirname "$0")/.."

start() {
  local name=$1 dir=$2
  if ! command -v lttng >/dev/null; then
    echo "lttng is not installed (apt-get install lttng-tools)" >&2
    return 1
  fi
  if ! lttng list >/dev/null 2>&1; then
    echo "no lttng session daemon (start one: lttng-sessiond --daemonize)" >&2
    return 1
  fi
  {
    lttng create "$name" --output="$dir" &&
      lttng enable-channel --userspace --session="$name" --blocking-timeout=inf \
        --subbuf-size="${LTTNG_SUBBUF_SIZE:-4M}" --num-subbuf="${LTTNG_NUM_SUBBUF:-8}" bench &&
      lttng enable-event --userspace --session="$name" --channel=bench bench:paw &&
      lttng start "$name"
  } >/dev/null || { lttng destroy "$name" >/dev/null 2>&1; return 1; }
}

finish() {
  local name=$1 dir=$2 emitted=${3:-} discarded recorded
  lttng stop "$name" >/dev/null
  discarded=$(lttng list "$name" | awk '/Discarded events:/ { s += $3 } END { print s + 0 }')
  lttng destroy "$name" >/dev/null
  if command -v babeltrace2 >/dev/null; then
    recorded=$(babeltrace2 "$dir" -c sink.utils.counter 2>/dev/null |
                 awk '/Event messages/ { n = $1 } END { print n + 0 }')
  else
    recorded="? (babeltrace2 is not installed; the trace is $(du -sh "$dir" | cut -f1))"
  fi
  echo "lttng session $name: ${emitted:+$emitted events emitted, }$recorded recorded, $discarded discarded (blocking channel, ${LTTNG_NUM_SUBBUF:-8} x ${LTTNG_SUBBUF_SIZE:-4M} a CPU)"
}

cmd=${1:-}
case $cmd in
  start) [ $# = 3 ] || { echo "usage: bench/lttng.sh start NAME DIR" >&2; exit 2; }; start "$2" "$3" ;;
  finish) [ $# -ge 3 ] || { echo "usage: bench/lttng.sh finish NAME DIR [EMITTED]" >&2; exit 2; }; shift; finish "$@" ;;
  *) echo "usage: bench/lttng.sh start NAME DIR | finish NAME DIR [EMITTED]" >&2; exit 2 ;;
esac
