#!/usr/bin/env bash
# helm.sh install|path|version: a pinned helm for the chart tests, built from source
# through the Go module proxy into <repo>/.cache/bin (no other download).
#
# install  builds helm $SIGLAKE_HELM_VERSION (default v3.22.0) unless that exact version is
#          already there; idempotent and safe to run concurrently (a lock serialises builds).
#          Prints the binary's path.
# path     prints the binary's path if it is installed with the pinned version, else fails.
# version  prints the pinned version.
#
# Environment: SIGLAKE_HELM_VERSION, GO (go command, default go).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

HELM_VERSION="${SIGLAKE_HELM_VERSION:-v3.22.0}"
BIN_DIR="$SIGLAKE_REPO/.cache/bin"
HELM="$BIN_DIR/helm"
STAMP="$BIN_DIR/.helm-version"
# Bump when the build recipe changes, so an old build is replaced.
RECIPE=2
GO="${GO:-go}"

installed() {
	[ -x "$HELM" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$HELM_VERSION r$RECIPE" ]
}

install() {
	if installed; then
		echo "$HELM"
		return
	fi
	command -v "$GO" >/dev/null || die "$GO not found: helm is built from source with Go"
	mkdir -p "$BIN_DIR"
	# One build at a time: parallel test binaries may all ask for helm.
	exec 9>"$BIN_DIR/.helm.lock"
	if command -v flock >/dev/null; then flock 9; fi
	if installed; then
		echo "$HELM"
		return
	fi
	log "building helm $HELM_VERSION (go install, a few minutes on a small machine)"
	# Stamp what helm's own Makefile stamps: its version and the Kubernetes version of its
	# client-go (the default for `helm template`; without it helm assumes v1.20).
	local gomod k8s_minor ldflags
	gomod="$(cd "$BIN_DIR" && GOFLAGS=-mod=mod "$GO" mod download -json "helm.sh/helm/v3@$HELM_VERSION" |
		sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')"
	[ -f "$gomod" ] || die "go mod download helm.sh/helm/v3@$HELM_VERSION failed"
	k8s_minor="$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod" | head -1)"
	[ -n "$k8s_minor" ] || die "no k8s.io/client-go requirement in helm's go.mod"
	ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
	ldflags="$ldflags -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$k8s_minor"
	ldflags="$ldflags -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$k8s_minor"
	# Outside any module so the repo's go.mod is never touched; CGO off gives a static helm.
	(cd "$BIN_DIR" && GOFLAGS=-mod=mod GOBIN="$BIN_DIR" CGO_ENABLED=0 \
		"$GO" install -trimpath -ldflags "$ldflags" "helm.sh/helm/v3/cmd/helm@$HELM_VERSION") >&2 ||
		die "go install helm.sh/helm/v3/cmd/helm@$HELM_VERSION failed"
	echo "$HELM_VERSION r$RECIPE" >"$STAMP"
	echo "$HELM"
}

case "${1:-}" in
install) install ;;
path)
	installed || die "helm $HELM_VERSION not installed: run $0 install"
	echo "$HELM"
	;;
version) echo "$HELM_VERSION" ;;
*) die "usage: $0 install|path|version" ;;
esac
