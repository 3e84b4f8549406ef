#!/usr/bin/env bash
# Times the read commands of `shardscope sessions` on large sessions against the 2 s target of
# issue 35 item 3 (docs/benchmarks.md, "Reads of a 1,024-rank session"). Optionally creates the
# sessions first with shardscope-load (flat out; a 1,024 x 10,000 session takes an hour or more on
# a 2-core machine, see the doc).
#
#   scripts/bench_session_reads.sh [--make] [--build DIR] [--shardscope BIN] [--ranks N] [--steps N] [--kernels N]
#                                  [--big FILE] [--profiled FILE] [--out DIR]
#
# --make           create the sessions: --big (ranks x steps, no window) and --profiled (8 ranks x 100
#                  steps and a window of --kernels activity records on rank 0)
# --big FILE       the large session's file (/tmp/ss_reads_big.db); its newest session is read
# --profiled FILE  the profiled session's file (/tmp/ss_reads_profiled.db)
# --session S      the big file's session to read (1); --other S: a second session of that file for
#                  compare and check (check refuses a session against itself; default 1)
#
# Prints one row per command (wall seconds, peak RSS, OK or OVER against 2 s) and a footer; exit
# status 1 when a command other than export is over the target (export writes every row; its
# time is reported, not judged), 2 for bad flags or a failed command.
set -euo pipefail

ss= session=1 other=1 build=build ranks=1024 steps=10000 kernels=5000000 make=0
big=/tmp/ss_reads_big.db profiled=/tmp/ss_reads_profiled.db out=/tmp/ss_reads_export
while [[ $# -gt 0 ]]; do
  case "$1" in
    --make) make=1; shift ;;
    --build) build=$2; shift 2 ;;
    --shardscope) ss=$2; shift 2 ;;
    --ranks) ranks=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --kernels) kernels=$2; shift 2 ;;
    --big) big=$2; shift 2 ;;
    --profiled) profiled=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --session) session=$2; shift 2 ;;
    --other) other=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "bench_session_reads.sh: unknown flag $1 (see --help)" >&2; exit 2 ;;
  esac
done
ss=${ss:-$build/app/cli/shardscope}
load=$build/app/load/shardscope-load
[[ -x $ss ]] || { echo "no $ss: build the shardscope target first" >&2; exit 2; }

if [[ $make == 1 ]]; then
  /usr/bin/time -f "created $big in %e s (peak RSS %M KB)" \
    "$load" --ranks "$ranks" --steps "$steps" --kernels 0 --db "$big" --min-rate 0
  /usr/bin/time -f "created $profiled in %e s (peak RSS %M KB)" \
    "$load" --ranks 8 --steps 100 --kernels "$kernels" --db "$profiled" --min-rate 0
fi

# The first open of a file of an older schema upgrades it (once); timed on its own.
/usr/bin/time -f "open (upgrade if older): %e s, peak RSS %M KB" "$ss" sessions list --db "$big" > /dev/null
/usr/bin/time -f "open (upgrade if older): %e s, peak RSS %M KB" "$ss" sessions list --db "$profiled" > /dev/null

commit=$(git -C "$(dirname "$0")/.." rev-parse --short HEAD 2>/dev/null || echo unknown)
echo "# $(date -u +%FT%TZ) commit $commit, $(nproc) cores, $(uname -m); target 2.00 s"
printf "%-28s %9s %10s %7s\n" "command" "time(s)" "rss(MB)" "verdict"
over=0
run() {  # run NAME JUDGED COMMAND...
  local name=$1 judged=$2; shift 2
  local stats
  /usr/bin/time -f "%e %M" "$@" > /dev/null 2> /tmp/ss_reads_err || true
  stats=$(tail -1 /tmp/ss_reads_err)
  local seconds=${stats% *} kb=${stats#* }
  local verdict=OK
  if awk "BEGIN{exit !($seconds > 2.0)}"; then verdict=$([[ $judged == 1 ]] && echo OVER || echo "(rows)"); fi
  [[ $verdict == OVER ]] && over=1
  printf "%-28s %9.2f %10.1f %7s\n" "$name" "$seconds" "$(awk "BEGIN{print $kb/1024}")" "$verdict"
}
run "sessions show"            1 "$ss" sessions show --db "$big" "$session"
run "sessions compare"         1 "$ss" sessions compare --db "$big" "$session" "$other"
run "sessions check"           1 "$ss" sessions check --db "$big" --baseline "$other" --candidate "$session"
run "sessions show --profile"  1 "$ss" sessions show --db "$profiled" 1 --profile
rm -rf "$out"
run "sessions export --csv"    0 "$ss" sessions export --db "$big" 1 --csv "$out"
if [[ -d $out ]]; then echo "# export: $(cat "$out"/*.csv | wc -l) lines, $(du -sh "$out" | cut -f1)"; fi
if [[ $over == 1 ]]; then echo "# FAILED: a read command took more than 2 s"; exit 1; fi
echo "# OK: every read command within 2 s (export: every row written, timed only)"
