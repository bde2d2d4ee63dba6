# shellcheck shell=bash
# Shared helpers for the test-service scripts. Source it; it defines functions and
# variables only and runs nothing.
#
# State lives under $SIGLAKE_TEST_STATE (default: <repo>/.cache/testenv) so a
# clean clone brings up its own services and `git clean` throws them away.

SIGLAKE_REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SIGLAKE_STATE="${SIGLAKE_TEST_STATE:-$SIGLAKE_REPO/.cache/testenv}"

log() { echo "[$(basename "$0")] $*" >&2; }
die() { log "error: $*"; exit 1; }

# port_busy PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
port_busy() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# free_port PREFERRED: prints PREFERRED if nothing listens there, else the next
# port above it that is free. A race with another process is possible but the
# callers re-check by waiting for their own server to answer.
free_port() {
	local p="$1"
	while port_busy "$p"; do
		p=$((p + 1))
		[ "$p" -lt 65000 ] || die "no free port found above $1"
	done
	echo "$p"
}

# random_token N: N random bytes as lowercase hex.
random_token() {
	od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'
}

# apt_install PKG...: installs Debian packages, running `apt-get update` at most
# once per state directory so repeated starts stay offline.
apt_install() {
	command -v apt-get >/dev/null || die "apt-get not found; install $* by hand"
	local sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	mkdir -p "$SIGLAKE_STATE"
	if [ ! -f "$SIGLAKE_STATE/.apt-updated" ]; then
		log "apt-get update"
		$sudo apt-get update -qq >&2 || die "apt-get update failed"
		touch "$SIGLAKE_STATE/.apt-updated"
	fi
	log "apt-get install $*"
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >&2 ||
		die "apt-get install $* failed"
}

# print_env FILE: prints FILE (export lines) if it exists, else fails.
print_env() {
	[ -f "$1" ] || die "$1 not found: start the service first"
	cat "$1"
}
