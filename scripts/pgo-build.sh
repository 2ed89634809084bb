#!/usr/bin/env bash
# Make the profile that lays out mcpjail's optimised builds (issue 10): build the proxy
# instrumented, run proxied calls through it, and keep what they ran in pgo/, which
# `scripts/rustc-pgo` (this repository's rustc wrapper) applies to every `--release` build made
# with the same rustc. Then builds target/release/mcpjail-proxy with it and prints its path.
#
#   scripts/pgo-build.sh [CALLS]        # default 20 000 calls a training run
#
# Run it after changing the proxy's hot path, or on a new rustc (the profile applies only to
# the rustc it was made with, see `scripts/rustc-pgo`), and commit pgo/.
#
# Why: on one CPU a call's cost is mostly the proxy's code coming back into the caches after
# every context switch, not its instruction count. Without a profile the hot path of a call is
# spread over ~640 cache lines of code (~40 KiB, more than L1i); laid out by the profile it is
# ~430, and ~20% fewer instructions run (see the README's twenty-fifth and twenty-sixth passes).
#
# The training runs the proxy jailed, unjailed and with --log (so the log's path is not judged
# cold) against the quiet files fixture, with the fixture caller: the same kind of traffic as
# the bench. Only functions that ran at least 1 000 times are kept (the per-call path; start-up
# runs once and is left to the compiler's static guesses): ~0.2 MB instead of 4.4.
#
# Needs rustup's llvm-tools (`rustup component add llvm-tools`) for llvm-profdata of the same
# LLVM as rustc. The instrumented build and the raw profiles go under target/pgo/.
set -euo pipefail
cd "$(dirname "$0")/.."

calls="${1:-20000}"
host="$(rustc -vV | sed -n 's/^host: //p')"
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [[ ! -x "$profdata" ]]; then
  echo "pgo-build.sh: no llvm-profdata for this rustc at $profdata" >&2
  echo "  hint: rustup component add llvm-tools" >&2
  exit 2
fi

out="$PWD/target/pgo"
rm -rf "$out/raw"
mkdir -p "$out/raw" pgo

# The caller and the fixture server, built as usual: only the proxy is profiled. The
# instrumented build has the repository's own rustflags too (RUSTFLAGS replaces them), so its
# code is the code the profile will be applied to.
cargo build --release --locked --bin mcpjail-fixture-caller --bin mcpjail-fixture-files >&2
RUSTFLAGS='--cfg sha2_backend="soft" '"-Cprofile-generate=$out/raw" \
  cargo build --release --locked --bin mcpjail-proxy --target-dir "$out/gen" >&2

scope="$(mktemp -d)"
trap 'rm -rf "$scope"' EXIT
train() {
  FIXTURE_QUIET_CALLS=1 LLVM_PROFILE_FILE="$out/raw/%p-%m.profraw" \
    target/release/mcpjail-fixture-caller "$1" -- \
    "$out/gen/release/mcpjail-proxy" "${@:2}" --env-keep FIXTURE_QUIET_CALLS --pin off -- \
    target/release/mcpjail-fixture-files "$scope" >&2
}
train "$calls"
train "$((calls / 4))" --no-jail
train "$((calls / 10))" --log

# Merged, then only the functions a call runs are kept: the text form has one function a
# paragraph, its counters after "# Counter Values:".
"$profdata" merge --sparse --text -o "$out/all.proftext" "$out/raw" >&2
awk -v min=1000 'BEGIN { RS = ""; ORS = "\n\n" }
  NR == 1 && /^# IR level/ { print; next }
  {
    n = split($0, line, "\n"); keep = 0
    for (i = 1; i <= n; i++) if (line[i] == "# Counter Values:") {
      count = line[i - 1] + 0
      for (j = 1; j <= count; j++) if (line[i + j] + 0 >= min) keep = 1
    }
    if (keep) print
  }' "$out/all.proftext" > "$out/hot.proftext"
"$profdata" merge --sparse -o pgo/mcpjail-proxy.profdata "$out/hot.proftext" >&2
rustc -vV | grep -E '^(release|commit-hash|LLVM version):' > pgo/rustc

# Cargo cannot see what the wrapper adds: a crate built before the profile existed would stay as
# it was. A build that had the profile rebuilds by itself when it changes (rustc lists the file
# among the crate's inputs), so only this first switch needs the clean.
cargo clean --release >&2
cargo build --release --locked --bins >&2
if ! target/release/mcpjail-proxy --version | grep -qF '(profile-guided)'; then
  echo "pgo-build.sh: target/release/mcpjail-proxy was built without the profile" >&2
  echo "  hint: is .cargo/config.toml's rustc-wrapper scripts/rustc-pgo, and MCPJAIL_PGO unset?" >&2
  exit 1
fi
echo "$PWD/target/release/mcpjail-proxy"
