package listen

import "github.com/siglake/siglake/sidecar/config"

// Exposure is what a buffer listener on addr risks with the credentials it has, as a warning for
// the log; "" when it listens on loopback only or is safe (a token over TLS, client certificates).
// A listener beyond loopback without any credential is refused before this
// (config.BufferCredentialsCheck) unless --buffer-insecure-no-auth is set.
func Exposure(addr, tokenFile, clientCAFile, certFile string) string {
	if config.BufferLoopback(addr) {
		return ""
	}
	switch {
	case tokenFile == "" && clientCAFile == "":
		return "the WAL buffer serves log rows beyond loopback without credentials, because --buffer-insecure-no-auth / SIGLAKE_BUFFER_INSECURE_NO_AUTH is set: anyone who reaches the port reads them; set --buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE (docs/wal-buffer.md)"
	case certFile == "":
		return "the WAL buffer takes bearer tokens over plain HTTP beyond loopback: whoever sees the traffic sees a token; set --buffer-tls-cert-file / SIGLAKE_BUFFER_TLS_CERT_FILE (docs/wal-buffer.md)"
	}
	return ""
}
