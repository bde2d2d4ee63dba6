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

# port_busy PORT: true when PORT cannot be bound on 127.0.0.1, or on ::1 where IPv6 is up (a
# PostgreSQL with listen_addresses=localhost binds both). It binds, as the server will (with
# SO_REUSEADDR, which PostgreSQL and Go set), rather than looking for a listener: a client socket
# that holds the port as its local end (connected, or in TIME-WAIT) accepts no connection, yet
# makes the server's bind fail. Needs python3 (docs/testing.md).
port_busy() {
	command -v python3 >/dev/null || die "python3 not found: it checks ports are free by binding them"
	! python3 -c '
import errno, socket, sys

def busy(family, host, port):
    try:
        s = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        return False  # no such address family here
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))
        s.listen(1)
    except OSError as e:
        # No ::1 (IPv6 off): nothing can hold the port there.
        return e.errno not in (errno.EADDRNOTAVAIL, errno.EAFNOSUPPORT)
    finally:
        s.close()
    return False

port = int(sys.argv[1])
if busy(socket.AF_INET, "127.0.0.1", port) or (socket.has_ipv6 and busy(socket.AF_INET6, "::1", port)):
    sys.exit(1)
' "$1"
}

# ephemeral_low: the first port of the kernel's ephemeral range (client sockets' local ports).
ephemeral_low() {
	local lo _
	if read -r lo _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null; then
		echo "$lo"
	else
		echo 32768
	fi
}

# free_port PREFERRED: prints PREFERRED if it can be bound, else the next port above it that can.
# A preferred port below the ephemeral range is searched only below it, where no client socket
# takes a port behind the server's back. A race with another process is possible but the callers
# re-check by waiting for their own server to answer.
free_port() {
	local p="$1" limit=65000 lo
	lo="$(ephemeral_low)"
	[ "$p" -ge "$lo" ] || limit="$lo"
	while port_busy "$p"; do
		p=$((p + 1))
		[ "$p" -lt "$limit" ] || die "no free port found from $1 below $limit"
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
