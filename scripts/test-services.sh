#!/usr/bin/env bash
# test-services.sh up|down|env|status: every service the integration tests use.
#
# up      starts PostgreSQL and versitygw and installs the DuckDB checker and headless
#         Chromium (each step idempotent), then prints the export lines; `eval "$(scripts/test-services.sh up)"`
#         puts them in the calling shell. Go tests also find them without the exports,
#         through the env files under $SIGLAKE_TEST_STATE (default <repo>/.cache/testenv).
# down    stops PostgreSQL and versitygw (their data stays for the next `up`).
# env     prints the export lines of the last `up`.
# status  exits 0 when both servers answer.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"
S="$SIGLAKE_REPO/scripts"

case "${1:-}" in
up)
	"$S/duckdb.sh" install
	"$S/chromium.sh" install
	pg="$("$S/postgres.sh" start)"
	s3="$("$S/versitygw.sh" start)"
	printf '%s\n%s\n' "$pg" "$s3"
	;;
down)
	"$S/versitygw.sh" stop
	"$S/postgres.sh" stop
	;;
env)
	"$S/postgres.sh" env
	"$S/versitygw.sh" env
	;;
status)
	"$S/postgres.sh" status && "$S/versitygw.sh" status
	;;
*) echo "usage: $0 up|down|env|status" >&2; exit 2 ;;
esac
