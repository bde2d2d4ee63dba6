#!/usr/bin/env bash
# duckdb.sh install|summarize|query: the DuckDB checker (scripts/duckdb/check.mjs).
#
# install    runs `npm ci` in scripts/duckdb when its node_modules do not match
#            package-lock.json (the npm package ships DuckDB prebuilt, so the checker
#            works offline afterwards). Idempotent.
# summarize  / query: run check.mjs with the remaining arguments (see its header).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

DIR="$SIGLAKE_REPO/scripts/duckdb"
STAMP="$DIR/node_modules/.siglake-lock-md5"

install() {
	if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
		apt_install nodejs npm
	fi
	local want
	want="$(md5sum <"$DIR/package-lock.json" | cut -c1-32)"
	if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ] && [ -d "$DIR/node_modules/@duckdb/node-api" ]; then
		return
	fi
	log "npm ci in scripts/duckdb"
	(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error) >&2 || die "npm ci failed"
	echo "$want" >"$STAMP"
}

case "${1:-}" in
install) install ;;
summarize | query) exec node "$DIR/check.mjs" "$@" ;;
*) echo "usage: $0 install | summarize [ARGS...] | query SQL" >&2; exit 2 ;;
esac
