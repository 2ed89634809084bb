#!/usr/bin/env bash
# The fuzzing campaign (issue 14): every target in fuzz/ for SECONDS_PER_TARGET (default 3600,
# the issue's CPU-hour), one after another, each then minimised back into fuzz/corpus/<target>/
# (commit what changed). The target bodies and their invariants are src/fuzzing/*.rs. A crash stops the campaign with the input in fuzz/artifacts/<target>/:
# fix the bug, copy the input to fuzz/regressions/<target>/ (tests/fuzz_replay.rs replays it on
# stable), and run again.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz --locked`). JOBS sets
# libFuzzer's parallel jobs per target (default 1).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SECONDS_PER_TARGET="${1:-3600}"
case "$SECONDS_PER_TARGET" in ''|*[!0-9]*)
    echo "fuzz.sh: error: SECONDS_PER_TARGET must be a number of seconds, got '$SECONDS_PER_TARGET'; hint: scripts/fuzz.sh 3600" >&2
    exit 1;;
esac
shift || true
JOBS="${JOBS:-1}"

cargo +nightly fuzz --help >/dev/null 2>&1 ||
    { echo "fuzz.sh: error: cargo-fuzz on a nightly toolchain is needed; hint: rustup toolchain install nightly && cargo install cargo-fuzz --locked" >&2; exit 1; }

if [ "$#" -gt 0 ]; then
    TARGETS=("$@")
else
    mapfile -t TARGETS < <(cargo +nightly fuzz list)
fi

for target in "${TARGETS[@]}"; do
    corpus="fuzz/corpus/$target"
    mkdir -p "$corpus" "fuzz/regressions/$target"
    echo "fuzz.sh: $target for ${SECONDS_PER_TARGET}s ($JOBS job(s))" >&2
    # The regressions seed the run too, so the fuzzer starts from every input that ever broke.
    # -jobs makes libFuzzer fork workers that log to fuzz-N.log: only when asked for more than one.
    parallel=()
    if [ "$JOBS" -gt 1 ]; then parallel=(-jobs="$JOBS" -workers="$JOBS"); fi
    # /usr/bin/time reports the CPU the fuzzer used (its waited-for children included): the
    # campaign's unit is CPU time, which a loaded machine gives less of than wall time.
    cpu_file=$(mktemp)
    /usr/bin/time -f "%U %S" -o "$cpu_file" \
        cargo +nightly fuzz run "$target" "$corpus" "fuzz/regressions/$target" -- \
        -max_total_time="$SECONDS_PER_TARGET" "${parallel[@]}" \
        -print_final_stats=1 -timeout=10 -rss_limit_mb=4096
    cpu=$(awk '{printf "%d", $1 + $2}' "$cpu_file")
    rm -f "$cpu_file"
    # The ledger of every campaign run (fuzz/CAMPAIGN.md sums it per target).
    printf '%s\t%s\t%s\n' "$(date -u +%Y-%m-%dT%H:%MZ)" "$target" "$cpu" >> fuzz/campaign.tsv
    echo "fuzz.sh: $target used ${cpu} CPU seconds" >&2
    echo "fuzz.sh: minimising $corpus" >&2
    # A greedy set cover over edges (not hit counts) keeps the committed corpus to tens or
    # hundreds of files per target; every edge the run reached stays covered.
    cargo +nightly fuzz cmin "$target" "$corpus" -- -set_cover_merge=1 -use_counters=0
    echo "fuzz.sh: $target: $(find "$corpus" -type f | wc -l) corpus files" >&2
done
