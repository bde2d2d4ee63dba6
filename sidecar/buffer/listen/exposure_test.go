package listen

import (
	"strings"
	"testing"
)

// TestExposure: a listener beyond loopback is warned about when it has no credential (the
// insecure opt-out) or takes tokens over plain HTTP; loopback, a token over TLS and client
// certificates are not.
func TestExposure(t *testing.T) {
	for _, c := range []struct {
		name                               string
		addr, token, clientCA, cert, about string
	}{
		{name: "loopback without credentials", addr: "127.0.0.1:8081"},
		{name: "no credentials", addr: "0.0.0.0:8081", about: "without credentials"},
		{name: "token over plain HTTP", addr: "0.0.0.0:8081", token: "tok", about: "over plain HTTP"},
		{name: "token over TLS", addr: "0.0.0.0:8081", token: "tok", cert: "cert.pem"},
		{name: "client certificates", addr: "0.0.0.0:8081", clientCA: "ca.pem", cert: "cert.pem"},
	} {
		got := Exposure(c.addr, c.token, c.clientCA, c.cert)
		if (c.about == "") != (got == "") || !strings.Contains(got, c.about) {
			t.Errorf("%s: Exposure = %q, want a warning about %q", c.name, got, c.about)
		}
	}
}
