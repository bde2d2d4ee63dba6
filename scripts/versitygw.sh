#!/usr/bin/env bash
# versitygw.sh start|stop|status|env|clean: a real S3 server (versitygw, POSIX backend) for tests.
#
# start  installs versitygw v1.8.0 with `go install` into <repo>/.cache/bin if missing
#        (built once, then cached), serves the directory $SIGLAKE_TEST_STATE/versitygw/root
#        on 127.0.0.1, creates the test bucket, and prints the export lines:
#        SIGLAKE_TEST_S3_ENDPOINT, _ACCESS_KEY, _SECRET_KEY, _BUCKET, _REGION, _ROOT.
#        Idempotent: a running server is reused.
# stop   stops the server (objects kept; start serves them again on the same port).
# status exits 0 when the server answers.
# env    prints the export lines of the last start.
# clean  stops the server and deletes its directory.
#
# Environment: SIGLAKE_TEST_S3_PORT (preferred port, default 27070, below the ephemeral range; the next free one is
# taken when it is busy), SIGLAKE_TEST_S3_BUCKET (default siglake-test),
# SIGLAKE_TEST_STATE (state directory), VERSITYGW (path of a versitygw binary to use).
set -euo pipefail
# shellcheck source=scripts/lib.sh
. "$(dirname "$0")/lib.sh"

VGW_VERSION="v1.8.0"
VGW_STATE="$SIGLAKE_STATE/versitygw"
ENV_FILE="$SIGLAKE_STATE/versitygw.env"
GOBIN_DIR="$SIGLAKE_REPO/.cache/bin"
BUCKET="${SIGLAKE_TEST_S3_BUCKET:-siglake-test}"
REGION="us-east-1"

ensure_installed() {
	# curl signs the bucket-creation and readiness requests (AWS SigV4 needs curl >= 7.75).
	command -v curl >/dev/null || apt_install curl ca-certificates
	if [ -n "${VERSITYGW:-}" ]; then
		VGW="$VERSITYGW"
		[ -x "$VGW" ] || die "VERSITYGW=$VGW is not an executable"
		return
	fi
	VGW="$GOBIN_DIR/versitygw"
	# `go install` builds report no version of their own; the module version is in
	# the binary's build info.
	if [ -x "$VGW" ] && go version -m "$VGW" 2>/dev/null | grep -q "github.com/versity/versitygw[[:space:]]*$VGW_VERSION"; then
		return
	fi
	command -v go >/dev/null || die "go not found: needed to install versitygw"
	log "go install github.com/versity/versitygw/cmd/versitygw@$VGW_VERSION (slow the first time)"
	mkdir -p "$GOBIN_DIR"
	(cd "$SIGLAKE_REPO" && GOBIN="$GOBIN_DIR" GOFLAGS="" go install "github.com/versity/versitygw/cmd/versitygw@$VGW_VERSION") >&2 ||
		die "go install versitygw failed"
	VGW="$GOBIN_DIR/versitygw"
}

# pid_alive: the recorded process runs and is still versitygw (after a reboot the pid
# may belong to something else, which must never be signalled).
pid_alive() {
	[ -f "$VGW_STATE/pid" ] || return 1
	local pid
	pid="$(cat "$VGW_STATE/pid")"
	kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q versitygw
}

# s3_request METHOD PATH: a SigV4-signed request with an empty body as the root user;
# prints the HTTP status. The payload hash header is the SHA-256 of the empty string.
s3_request() {
	curl -sS -o "$VGW_STATE/last-response" -w '%{http_code}' -X "$1" \
		-H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
		--aws-sigv4 "aws:amz:$REGION:s3" --user "$ACCESS:$SECRET" \
		"http://127.0.0.1:$PORT$2"
}

wait_ready() {
	local _
	for _ in $(seq 1 100); do
		# Only whether the process exists: it is the one just started (no stale pid to guard
		# against), and pid_alive's cmdline check reads nothing for an instant while setsid execs
		# versitygw, which once failed a start whose server then came up.
		if ! kill -0 "$(cat "$VGW_STATE/pid")" 2>/dev/null; then
			tail -20 "$VGW_STATE/versitygw.log" >&2 || true
			log "versitygw exited during start"
			return 1
		fi
		if [ "$(s3_request GET / 2>/dev/null || true)" = "200" ]; then
			return 0
		fi
		sleep 0.1
	done
	tail -20 "$VGW_STATE/versitygw.log" >&2 || true
	log "versitygw did not answer on 127.0.0.1:$PORT within 10 s"
	return 1
}

load_credentials() {
	mkdir -p "$VGW_STATE"
	[ -f "$VGW_STATE/access" ] || echo "siglake$(random_token 4)" >"$VGW_STATE/access"
	[ -f "$VGW_STATE/secret" ] || random_token 20 >"$VGW_STATE/secret"
	ACCESS="$(cat "$VGW_STATE/access")"
	SECRET="$(cat "$VGW_STATE/secret")"
}

start() {
	ensure_installed
	load_credentials
	ROOT="$VGW_STATE/root"
	mkdir -p "$ROOT" "$VGW_STATE/meta"
	# A server started by an older version of this script runs without --keep-alive (or other
	# flags added since): restart it with today's, on its port, keeping its data.
	if pid_alive && ! tr '\0' ' ' <"/proc/$(cat "$VGW_STATE/pid")/cmdline" 2>/dev/null | grep -q -- '--keep-alive'; then
		log "restarting versitygw: it runs without --keep-alive"
		stop
	fi
	if pid_alive && [ -f "$VGW_STATE/port" ]; then
		PORT="$(cat "$VGW_STATE/port")"
	else
		if [ -f "$VGW_STATE/port" ] && ! port_busy "$(cat "$VGW_STATE/port")"; then
			PORT="$(cat "$VGW_STATE/port")"
		else
			PORT="$(free_port "${SIGLAKE_TEST_S3_PORT:-27070}")"
		fi
		echo "$PORT" >"$VGW_STATE/port"

		log "starting versitygw on 127.0.0.1:$PORT serving $ROOT"
		# The sidecar directory holds object metadata, so the backend works on
		# filesystems without user extended attributes (tmpfs, some overlays).
		# --keep-alive: versitygw closes every connection after one response unless
		# told otherwise; S3 and other stores keep them, and a test server that does
		# not charges every request a new TCP connection (half the group committer's
		# CPU in its benchmark was dialing).
		ROOT_ACCESS_KEY_ID="$ACCESS" ROOT_SECRET_ACCESS_KEY="$SECRET" \
			setsid "$VGW" --port "127.0.0.1:$PORT" --region "$REGION" --quiet --keep-alive \
			posix --sidecar "$VGW_STATE/meta" "$ROOT" \
			>"$VGW_STATE/versitygw.log" 2>&1 </dev/null &
		echo $! >"$VGW_STATE/pid"
	fi
	wait_ready || { stop; die "versitygw did not come up"; }

	local code
	code="$(s3_request PUT "/$BUCKET")"
	case "$code" in
	200) log "created bucket $BUCKET" ;;
	409) ;; # already exists and is ours
	*) cat "$VGW_STATE/last-response" >&2; die "creating bucket $BUCKET: HTTP $code" ;;
	esac

	cat >"$ENV_FILE" <<ENV
export SIGLAKE_TEST_S3_ENDPOINT='http://127.0.0.1:$PORT'
export SIGLAKE_TEST_S3_ACCESS_KEY='$ACCESS'
export SIGLAKE_TEST_S3_SECRET_KEY='$SECRET'
export SIGLAKE_TEST_S3_BUCKET='$BUCKET'
export SIGLAKE_TEST_S3_REGION='$REGION'
export SIGLAKE_TEST_S3_ROOT='$ROOT'
ENV
	print_env "$ENV_FILE"
}

stop() {
	if pid_alive; then
		local pid
		pid="$(cat "$VGW_STATE/pid")"
		log "stopping versitygw (pid $pid)"
		kill "$pid"
		local _
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
	fi
	rm -f "$VGW_STATE/pid"
}

status() {
	pid_alive && [ -f "$VGW_STATE/port" ] || exit 1
	load_credentials
	PORT="$(cat "$VGW_STATE/port")"
	[ "$(s3_request GET / 2>/dev/null || true)" = "200" ]
}

clean() {
	stop
	rm -rf "$VGW_STATE" "$ENV_FILE"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
status) status ;;
env) print_env "$ENV_FILE" ;;
clean) clean ;;
*) echo "usage: $0 start|stop|status|env|clean" >&2; exit 2 ;;
esac
