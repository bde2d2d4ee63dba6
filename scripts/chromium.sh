#!/usr/bin/env bash
# chromium.sh install|path: headless Chromium for the status-page tests (test/e2e/pages_test.go).
#
# install  installs Debian's chromium package when /usr/bin/chromium is missing. Idempotent.
# path     prints the browser's path, or fails when it is not installed.
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

BIN=/usr/bin/chromium

case "${1:-}" in
install)
	[ -x "$BIN" ] || apt_install chromium
	[ -x "$BIN" ] || die "chromium installed but $BIN is missing"
	;;
path)
	[ -x "$BIN" ] || die "$BIN not found: run $0 install"
	echo "$BIN"
	;;
*) echo "usage: $0 install|path" >&2; exit 2 ;;
esac
