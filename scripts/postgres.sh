#!/usr/bin/env bash
# postgres.sh start|stop|status|env|clean: a throwaway PostgreSQL cluster for tests.
#
# start  installs Debian's postgresql if initdb/pg_ctl are missing, creates a cluster
#        under $SIGLAKE_TEST_STATE/postgres (default <repo>/.cache/testenv), listens on
#        127.0.0.1 only, creates role and database `siglake`, and prints
#        `export SIGLAKE_TEST_POSTGRES_DSN=...`. Idempotent: a running cluster is reused.
# stop   stops the cluster (data kept, so start brings the same one back on the same port).
# status exits 0 when the cluster accepts connections.
# env    prints the export lines of the last start.
# clean  stops the cluster and deletes its directory.
#
# Environment: SIGLAKE_TEST_PG_PORT (preferred port, default 25432, below the ephemeral range; the next free one is
# taken when it is busy), SIGLAKE_TEST_STATE (state directory).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

PG_STATE="$SIGLAKE_STATE/postgres"
ENV_FILE="$SIGLAKE_STATE/postgres.env"

# PostgreSQL refuses to run as root; as root we run it as the `postgres` system user,
# which must be able to reach the data directory. When the state directory sits
# under a path that user cannot traverse (a home directory with mode 700), the
# cluster goes under the temp directory instead, keyed by the state path.
pg_user=""
if [ "$(id -u)" -eq 0 ]; then pg_user="postgres"; fi

as_pg() {
	if [ -n "$pg_user" ]; then
		runuser -u "$pg_user" -- "$@"
	else
		"$@"
	fi
}

find_bindir() {
	local d
	# Newest major version first.
	for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V -r); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then
			echo "$d"
			return 0
		fi
	done
	if command -v initdb >/dev/null && command -v pg_ctl >/dev/null; then
		dirname "$(command -v pg_ctl)"
		return 0
	fi
	return 1
}

ensure_installed() {
	if ! BIN="$(find_bindir)"; then
		apt_install postgresql
		BIN="$(find_bindir)" || die "postgresql installed but initdb/pg_ctl not found under /usr/lib/postgresql/*/bin"
	fi
	if [ -n "$pg_user" ] && ! id "$pg_user" >/dev/null 2>&1; then
		log "creating system user $pg_user"
		useradd --system --home-dir /nonexistent --shell /usr/sbin/nologin "$pg_user"
	fi
}

# data_root: where the cluster lives; recorded on first start so later calls agree.
data_root() {
	if [ -f "$PG_STATE/location" ]; then
		cat "$PG_STATE/location"
		return
	fi
	mkdir -p "$PG_STATE"
	local dir="$PG_STATE/cluster"
	if [ -n "$pg_user" ] && ! runuser -u "$pg_user" -- test -x "$PG_STATE"; then
		local key
		key="$(echo "$PG_STATE" | md5sum | cut -c1-12)"
		dir="${TMPDIR:-/tmp}/siglake-pg-$key"
		log "the $pg_user user cannot reach $PG_STATE; cluster goes to $dir"
	fi
	echo "$dir" >"$PG_STATE/location"
	echo "$dir"
}

running() {
	local root="$1"
	[ -f "$root/data/postmaster.pid" ] && as_pg "$BIN/pg_ctl" -D "$root/data" status >/dev/null 2>&1
}

start() {
	ensure_installed
	local root
	root="$(data_root)"
	if running "$root"; then
		print_env "$ENV_FILE"
		return
	fi
	mkdir -p "$root"
	[ -z "$pg_user" ] || chown "$pg_user" "$root"
	chmod 700 "$root"

	if [ ! -f "$root/data/PG_VERSION" ]; then
		log "initdb in $root/data"
		rm -rf "$root/data"
		as_pg "$BIN/initdb" -D "$root/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
			--encoding=UTF8 --locale=C.UTF-8 >"$PG_STATE/initdb.log" 2>&1 ||
			{ cat "$PG_STATE/initdb.log" >&2; die "initdb failed"; }
		# Throwaway cluster: durability is not what the tests measure, but catalog
		# commits must still be transactional, which fsync=off keeps.
		cat >>"$root/data/postgresql.conf" <<CONF
listen_addresses = '127.0.0.1'
unix_socket_directories = '$root'
max_connections = 200
fsync = off
synchronous_commit = off
full_page_writes = off
CONF
	fi

	local port
	if [ -f "$PG_STATE/port" ] && ! port_busy "$(cat "$PG_STATE/port")"; then
		port="$(cat "$PG_STATE/port")"
	else
		port="$(free_port "${SIGLAKE_TEST_PG_PORT:-25432}")"
	fi
	echo "$port" >"$PG_STATE/port"

	log "starting postgres on 127.0.0.1:$port"
	as_pg "$BIN/pg_ctl" -D "$root/data" -o "-p $port" -l "$root/postgres.log" -w -t 60 start >/dev/null ||
		{ tail -20 "$root/postgres.log" >&2; die "pg_ctl start failed"; }

	local pw
	if [ -f "$PG_STATE/password" ]; then
		pw="$(cat "$PG_STATE/password")"
	else
		pw="$(random_token 12)"
		echo "$pw" >"$PG_STATE/password"
	fi
	local psql=("$BIN/psql" -h "$root" -p "$port" -U postgres -v ON_ERROR_STOP=1 -qAt)
	as_pg "${psql[@]}" -d postgres >/dev/null <<SQL
DO \$\$ BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'siglake') THEN
    CREATE ROLE siglake LOGIN CREATEDB PASSWORD '$pw';
  ELSE
    ALTER ROLE siglake LOGIN CREATEDB PASSWORD '$pw';
  END IF;
END \$\$;
SQL
	if [ "$(as_pg "${psql[@]}" -d postgres -c "SELECT 1 FROM pg_database WHERE datname = 'siglake'")" != "1" ]; then
		as_pg "${psql[@]}" -d postgres -c "CREATE DATABASE siglake OWNER siglake" >/dev/null
	fi

	cat >"$ENV_FILE" <<ENV
export SIGLAKE_TEST_POSTGRES_DSN='postgres://siglake:$pw@127.0.0.1:$port/siglake?sslmode=disable'
ENV
	print_env "$ENV_FILE"
}

stop() {
	BIN="$(find_bindir)" || { log "postgresql not installed; nothing to stop"; return; }
	[ -f "$PG_STATE/location" ] || { log "no cluster; nothing to stop"; return; }
	local root
	root="$(cat "$PG_STATE/location")"
	if running "$root"; then
		log "stopping postgres"
		as_pg "$BIN/pg_ctl" -D "$root/data" -m fast -w -t 60 stop >/dev/null
	fi
}

status() {
	BIN="$(find_bindir)" || exit 1
	[ -f "$PG_STATE/location" ] || exit 1
	running "$(cat "$PG_STATE/location")"
}

clean() {
	stop
	if [ -f "$PG_STATE/location" ]; then
		rm -rf "$(cat "$PG_STATE/location")"
	fi
	rm -rf "$PG_STATE" "$ENV_FILE"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
env) print_env "$ENV_FILE" ;;
clean) clean ;;
*) echo "usage: $0 start|stop|status|env|clean" >&2; exit 2 ;;
esac
