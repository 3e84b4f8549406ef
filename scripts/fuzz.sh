#!/usr/bin/env bash
# scripts/fuzz.sh [TARGET|all] [SECONDS]: builds the libFuzzer targets of tests/fuzz/ in
# build-fuzz/ (clang 14, AddressSanitizer + UndefinedBehaviorSanitizer, no LibTorch) and runs
# TARGET (default: all of them, one after another) for SECONDS each (default 30). New inputs
# go to build-fuzz/corpus/TARGET; the committed seeds (tests/fuzz/corpus/TARGET, or the folder
# build-fuzz/fuzzers.txt names for a target kept beside its reader) are read only.
# Exits 1 at the first target that reports (a crash, a sanitizer finding, a leak, a timeout),
# naming the input it saved; reproduce with build-fuzz/tests/fuzz/TARGET FILE.
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET="${1:-all}"
SECONDS_EACH="${2:-30}"
BUILD_DIR="${SHARDSCOPE_FUZZ_BUILD_DIR:-build-fuzz}"
CLANG="${SHARDSCOPE_CLANG:-clang-14}"
if ! command -v "$CLANG" >/dev/null || ! command -v "${CLANG/clang/clang++}" >/dev/null; then
  echo "[fuzz] $CLANG not found: install clang and libclang-rt-14-dev (scripts/install_test_deps.sh does)" >&2
  exit 2
fi
if [[ ! -f "$BUILD_DIR/build.ninja" ]]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DSHARDSCOPE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER="$CLANG" -DCMAKE_CXX_COMPILER="${CLANG/clang/clang++}" >"$BUILD_DIR.configure.log" 2>&1 || {
    cat "$BUILD_DIR.configure.log" >&2; echo "[fuzz] configure failed (log above)" >&2; exit 1; }
fi
cmake --build "$BUILD_DIR" -j "${SHARDSCOPE_JOBS:-$(nproc)}"
# fuzzers.txt: one "NAME SEED-FOLDER" line per target (tests/fuzz/CMakeLists.txt writes it).
declare -A SEEDS=()
ALL=()
while read -r name seeds; do
  [[ -n "$name" ]] || continue
  ALL+=("$name")
  SEEDS[$name]="$seeds"
done < "$BUILD_DIR/fuzzers.txt"
if [[ "$TARGET" == all ]]; then
  TARGETS=("${ALL[@]}")
elif printf '%s\n' "${ALL[@]}" | grep -qx "$TARGET"; then
  TARGETS=("$TARGET")
else
  echo "[fuzz] unknown target '$TARGET'; the targets are: ${ALL[*]}" >&2
  exit 2
fi
# Leaks count as reports; the sanitizers stop at the first error.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
for t in "${TARGETS[@]}"; do
  corpus="$BUILD_DIR/corpus/$t" artifacts="$BUILD_DIR/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  dict=()
  [[ -f "tests/fuzz/$t.dict" ]] && dict=("-dict=tests/fuzz/$t.dict")
  echo "[fuzz] $t for ${SECONDS_EACH} s"
  if ! "$BUILD_DIR/tests/fuzz/$t" -max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$artifacts/" "${dict[@]}" "$corpus" "${SEEDS[$t]}" \
      >"$BUILD_DIR/$t.log" 2>&1; then
    tail -n 60 "$BUILD_DIR/$t.log" >&2
    echo "[fuzz] $t FAILED: the input is in $artifacts/ (log: $BUILD_DIR/$t.log); reproduce with" \
         "$BUILD_DIR/tests/fuzz/$t $artifacts/<file>" >&2
    exit 1
  fi
  grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$BUILD_DIR/$t.log" | tr '\n' ' ' | sed "s/^/[fuzz] $t OK: /"; echo
done
