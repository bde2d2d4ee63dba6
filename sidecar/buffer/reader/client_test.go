package reader

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestResolvedHTTPSVerifiesTheName: a reader that dials one pod's address of a name (Resolve
// expands a headless Service into its pods) verifies the buffer's certificate for the name it was
// given, not for the address it dials, which a Service's certificate does not hold.
func TestResolvedHTTPSVerifiesTheName(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate()) // valid for example.com and loopback addresses, not "localhost"
	tc := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
	url := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if resp, err := hc.Get(url); err == nil {
		resp.Body.Close()
		t.Fatal("a certificate without the dialled name verified for it: the test proves nothing")
	}
	resp, err := withServerName(hc, "example.com").Get(url)
	if err != nil {
		t.Fatalf("verified for the name: %v", err)
	}
	resp.Body.Close()
	if tc.ServerName != "" {
		t.Fatal("withServerName changed the caller's TLS configuration")
	}
}
