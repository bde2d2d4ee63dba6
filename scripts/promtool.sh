#!/usr/bin/env bash
# promtool.sh install|path|version: a pinned promtool for the chart tests (it checks the
# PrometheusRule's alerts and the dashboard's queries), built from source through the Go module
# proxy into <repo>/.cache/bin.
#
# install  builds promtool $SIGLAKE_PROMTOOL_VERSION (default v0.316.0, the Go module version of
#          Prometheus 3.16.0) unless that version is already there; idempotent and safe to run
#          concurrently. Prints the binary's path.
# path     prints the binary's path if the pinned version is installed, else fails.
# version  prints the pinned version.
#
# Environment: SIGLAKE_PROMTOOL_VERSION, GO (go command, default go).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

PROMTOOL_VERSION="${SIGLAKE_PROMTOOL_VERSION:-v0.316.0}"
BIN_DIR="$SIGLAKE_REPO/.cache/bin"
PROMTOOL="$BIN_DIR/promtool"
STAMP="$BIN_DIR/.promtool-version"
GO="${GO:-go}"

installed() {
	[ -x "$PROMTOOL" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$PROMTOOL_VERSION" ]
}

install() {
	if installed; then
		echo "$PROMTOOL"
		return
	fi
	command -v "$GO" >/dev/null || die "$GO not found: promtool is built from source with Go"
	mkdir -p "$BIN_DIR"
	exec 9>"$BIN_DIR/.promtool.lock"
	if command -v flock >/dev/null; then flock 9; fi
	if installed; then
		echo "$PROMTOOL"
		return
	fi
	log "building promtool $PROMTOOL_VERSION (go install, several minutes on a small machine)"
	# Outside any module so the repo's go.mod is never touched; CGO off gives a static binary.
	(cd "$BIN_DIR" && GOFLAGS=-mod=mod GOBIN="$BIN_DIR" CGO_ENABLED=0 \
		"$GO" install -trimpath -ldflags "-s -w" "github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION") >&2 ||
		die "go install github.com/prometheus/prometheus/cmd/promtool@$PROMTOOL_VERSION failed"
	echo "$PROMTOOL_VERSION" >"$STAMP"
	echo "$PROMTOOL"
}

case "${1:-}" in
install) install ;;
path)
	installed || die "promtool $PROMTOOL_VERSION not installed: run $0 install"
	echo "$PROMTOOL"
	;;
version) echo "$PROMTOOL_VERSION" ;;
*) die "usage: $0 install|path|version" ;;
esac
