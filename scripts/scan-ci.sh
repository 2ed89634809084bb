#!/bin/sh
# mcpjail scan for an MCP server's CI: the recipe of docs/scan.md ("For server authors' CI").
#
#   scan-ci.sh [SCAN OPTIONS] -- COMMAND [ARGS...]
#
# Scans the server COMMAND with `mcpjail scan`, writes the SARIF report and the badge, and
# exits 0 when there are no findings, 1 when there are (the --fail-on conditions hold), 2 when
# the scan itself failed (bad arguments, the server did not start, mcpjail missing).
# An argument `{scope}` in COMMAND is replaced by a fresh empty directory, the server's declared
# scope (the scan remaps it into its sandbox). SCAN OPTIONS go to `mcpjail scan` as they are
# (e.g. `--timeout 30`); without a --fail-on among them, `--fail-on launders --fail-on
# exfiltrated` is used.
#
# Environment:
#   MCPJAIL          the mcpjail binary (default: `mcpjail` on PATH; when there is none and
#                    MCPJAIL_GIT is set, it is installed with
#                    `cargo install --locked --git $MCPJAIL_GIT mcpjail`)
#   MCPJAIL_GIT      the git URL of the mcpjail repository to install from (no default: this
#                    script does not guess where your copy of mcpjail comes from)
#   MCPJAIL_SARIF    the SARIF file (default mcpjail.sarif)
#   MCPJAIL_BADGE    the SVG badge (default mcpjail.svg)
set -eu

me=scan-ci.sh
sarif=${MCPJAIL_SARIF:-mcpjail.sarif}
badge=${MCPJAIL_BADGE:-mcpjail.svg}

usage() {
    echo "usage: $me [SCAN OPTIONS] -- COMMAND [ARGS...]   ({scope} in ARGS: a fresh scope directory)" >&2
    exit 2
}

# Scan options: everything before `--`, kept in order in a newline-free form by re-setting "$@"
# at the end (POSIX sh has no arrays).
nopts=0
fail_on=no
for arg in "$@"; do
    [ "$arg" = "--" ] && break
    case $arg in --fail-on | --fail-on=*) fail_on=yes ;; esac
    nopts=$((nopts + 1))
done
[ "$nopts" -lt "$#" ] || usage
[ "$((nopts + 1))" -lt "$#" ] || usage

if [ -n "${MCPJAIL:-}" ]; then
    mcpjail=$MCPJAIL
elif command -v mcpjail >/dev/null 2>&1; then
    mcpjail=mcpjail
elif [ -n "${MCPJAIL_GIT:-}" ]; then
    git_url=$MCPJAIL_GIT
    echo "$me: installing mcpjail from $git_url" >&2
    cargo install --locked --git "$git_url" mcpjail || { echo "$me: cargo install failed" >&2; exit 2; }
    mcpjail=mcpjail
else
    echo "$me: error: mcpjail is not on PATH; hint: put it there (cargo install --locked --path <mcpjail checkout>), set MCPJAIL=/path/to/mcpjail, or set MCPJAIL_GIT to the mcpjail repository's git URL to install it from" >&2
    exit 2
fi

scope=$(mktemp -d "${TMPDIR:-/tmp}/mcpjail-ci-scope.XXXXXX")
trap 'rm -rf "$scope"' EXIT

# Rebuild "$@" as: scan OPTIONS [--fail-on defaults] -- COMMAND with {scope} substituted.
i=0
n=$#
for arg in "$@"; do
    i=$((i + 1))
    if [ "$i" -le "$nopts" ]; then
        set -- "$@" "$arg"
    elif [ "$i" -eq "$((nopts + 1))" ]; then
        [ "$fail_on" = yes ] || set -- "$@" --fail-on launders --fail-on exfiltrated
        set -- "$@" --
    elif [ "$arg" = "{scope}" ]; then
        set -- "$@" "$scope"
    else
        set -- "$@" "$arg"
    fi
done
shift "$n"

status=0
"$mcpjail" scan --format sarif -o "$sarif" --badge "$badge" "$@" || status=$?
case $status in
    0) echo "$me: no findings ($sarif, $badge)" ;;
    3) echo "$me: findings, see $sarif" >&2; exit 1 ;;
    *) echo "$me: the scan failed (mcpjail exit status $status)" >&2; exit 2 ;;
esac
