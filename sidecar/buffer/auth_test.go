package buffer

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/siglake/siglake/sidecar/buffer/listen"
	"github.com/siglake/siglake/sidecar/buffer/reader"
	"github.com/siglake/siglake/sidecar/rows"
	"github.com/siglake/siglake/sidecar/rowsum"
	"github.com/siglake/siglake/sidecar/walgen"
)

const (
	tokenA = "tokenA-0123456789abcdef"
	tokenB = "tokenB-fedcba9876543210"
)

// writeTokens replaces the token file as a Secret volume does: a new file renamed over the path.
func writeTokens(t *testing.T, path string, lines ...string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// authService runs the buffer's real listener with o's credentials over sealed rows, and
// returns it with the fingerprint of the rows and the metrics.
func authService(t *testing.T, o Options) (*Service, rowsum.Sum, *Metrics) {
	t.Helper()
	h := newHarness(t, nil)
	recs := gen(t, 7, 2, 500, t0)
	h.e.Seal("events", recs...)
	m := NewMetrics(prometheus.NewRegistry())
	o.Addr, o.WALDir, o.MaxReaders, o.MemoryBytes, o.MaxResponseBytes = "127.0.0.1:0", h.e.WAL, 2, 256<<20, 256<<20
	s, err := Start(o, h.e.Lake.LoadTable, m, h.e.Log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, sumOf(t, recs, rows.Filter{}, walgen.Columns...), m
}

func readSum(c *reader.Client) (rowsum.Sum, error) {
	var s rowsum.Sum
	_, err := c.Read(context.Background(), "events", reader.Query{}, func(rec arrow.RecordBatch) error { return s.Add(rec, walgen.Columns...) })
	return s, err
}

// rawGet sends a GET with an Authorization header (none when empty).
func rawGet(t *testing.T, hc *http.Client, url, authz string) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(body)
}

// TestBufferRefusesReadersWithoutAToken: with a token file, a read without the header, with
// another scheme, with a wrong token, or with a token removed by a rotation gets 401 with a
// Bearer challenge and no row, and is counted by reason; a read with a token of the file gets
// every row. The rotation (add a token, then remove the old) reaches the running listener.
func TestBufferRefusesReadersWithoutAToken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, "# the buffer's readers", tokenA)
	s, want, m := authService(t, Options{TokenFile: file})
	url := "http://" + s.Addr() + "/v1/buffer/events"
	refused := func(authz, reason string) {
		t.Helper()
		before := testutil.ToFloat64(m.Unauthorized.WithLabelValues(reason))
		code, hdr, body := rawGet(t, http.DefaultClient, url, authz)
		if code != http.StatusUnauthorized || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") || hdr.Get("Content-Type") != "application/json" {
			t.Fatalf("Authorization %q: %d %v %s", authz, code, hdr, body)
		}
		if got := testutil.ToFloat64(m.Unauthorized.WithLabelValues(reason)); got != before+1 {
			t.Fatalf("Authorization %q: siglake_buffer_unauthorized_total{reason=%q} %v, want %v", authz, reason, got, before+1)
		}
	}
	refused("", reader.UnauthorizedMissing)
	refused("Basic "+tokenA, reader.UnauthorizedMalformed)
	refused("Bearer", reader.UnauthorizedMalformed)
	refused("Bearer "+tokenB, reader.UnauthorizedInvalid)
	refused("Bearer "+tokenA[:len(tokenA)-1], reader.UnauthorizedInvalid) // a prefix is not the token
	if code, _, _ := rawGet(t, http.DefaultClient, "http://"+s.Addr()+"/v1/buffer", ""); code != http.StatusUnauthorized {
		t.Fatalf("the listing without a token: %d", code)
	}
	// Every method and path is behind the check: a HEAD, or a path the buffer does not serve,
	// says nothing (not even 404 or 405) to a caller without a token.
	for _, probe := range []struct{ method, path string }{
		{http.MethodHead, "/v1/buffer/events"}, {http.MethodGet, "/nosuch"}, {http.MethodPost, "/v1/buffer/events"}} {
		req, _ := http.NewRequest(probe.method, "http://"+s.Addr()+probe.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("%s %s without a token: %d, want 401", probe.method, probe.path, resp.StatusCode)
		}
	}
	if n := testutil.ToFloat64(m.Requests.WithLabelValues("200")); n != 0 {
		t.Fatalf("refused reads reached the handler: %v reads answered 200", n)
	}

	// The Go client: without a token its error names the option; with one it reads every row.
	_, err := readSum(&reader.Client{Addr: s.Addr()})
	var se *reader.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized || !strings.Contains(err.Error(), "SIGLAKE_BUFFER_TOKEN_FILE") {
		t.Fatalf("read without a token: %v", err)
	}
	if got, err := readSum(&reader.Client{Addr: s.Addr(), Token: tokenA}); err != nil || got != want {
		t.Fatalf("read with the token: %+v %v, want %+v", got, err, want)
	}

	// Rotation: B is added (both read), then A removed (A refused), without a restart.
	writeTokens(t, file, tokenB, tokenA)
	for _, tok := range []string{tokenA, tokenB} {
		if got, err := readSum(&reader.Client{Addr: s.Addr(), Token: tok}); err != nil || got != want {
			t.Fatalf("during the rotation, %s: %+v %v", tok[:6], got, err)
		}
	}
	writeTokens(t, file, tokenB)
	refused("Bearer "+tokenA, reader.UnauthorizedInvalid)
	if got, err := readSum(&reader.Client{Addr: s.Addr(), Token: tokenB}); err != nil || got != want {
		t.Fatalf("after the rotation, B: %+v %v", got, err)
	}
	// A broken file keeps the tokens read before: a bad write must not lock readers out, nor let
	// anyone in.
	writeTokens(t, file, "short")
	refused("Bearer short", reader.UnauthorizedInvalid)
	if _, err := readSum(&reader.Client{Addr: s.Addr(), Token: tokenB}); err != nil {
		t.Fatalf("after a broken rewrite of the file, B: %v", err)
	}
}

// TestBufferTokenFileUpdateVisible: an update of the token file that cannot be read keeps the
// tokens before, the one it meant to revoke included, so it is counted once (however many
// requests see it) and the gauge says how many tokens are accepted; the next good file wins.
func TestBufferTokenFileUpdateVisible(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, tokenA)
	s, want, m := authService(t, Options{TokenFile: file})
	if n := testutil.ToFloat64(m.Tokens); n != 1 {
		t.Fatalf("siglake_buffer_tokens %v after the start, want 1", n)
	}
	// Meant to revoke A for B, with a bad line: nothing of it is taken.
	writeTokens(t, file, tokenB, "short")
	for range 3 {
		if got, err := readSum(&reader.Client{Addr: s.Addr(), Token: tokenA}); err != nil || got != want {
			t.Fatalf("A after a broken update: %+v %v", got, err)
		}
	}
	if n := testutil.ToFloat64(m.TokenReloadErrors); n != 1 {
		t.Fatalf("siglake_buffer_token_reload_errors_total %v after a broken update and 3 reads, want 1", n)
	}
	eqTokens := func(want float64) {
		t.Helper()
		if n := testutil.ToFloat64(m.Tokens); n != want {
			t.Fatalf("siglake_buffer_tokens %v, want %v", n, want)
		}
	}
	eqTokens(1)
	writeTokens(t, file, tokenB)
	if code, _, body := rawGet(t, http.DefaultClient, "http://"+s.Addr()+"/v1/buffer/events", "Bearer "+tokenA); code != http.StatusUnauthorized {
		t.Fatalf("A after the good update: %d %s", code, body)
	}
	if got, err := readSum(&reader.Client{Addr: s.Addr(), Token: tokenB}); err != nil || got != want {
		t.Fatalf("B after the good update: %+v %v", got, err)
	}
	eqTokens(1)
	// The sweep re-reads the file too: the gauge follows an update with no request.
	writeTokens(t, file, tokenB, tokenA)
	deadline := time.Now().Add(5 * time.Second)
	for testutil.ToFloat64(m.Tokens) != 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	eqTokens(2)
	if n := testutil.ToFloat64(m.TokenReloadErrors); n != 1 {
		t.Fatalf("siglake_buffer_token_reload_errors_total %v after good updates, want 1", n)
	}
}

// TestBufferRefusesBeforeReadingTheBody: a refused request is answered at once and its
// connection closed, without waiting for the body it announced (no byte of it is read).
func TestBufferRefusesBeforeReadingTheBody(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, tokenA)
	s, _, _ := authService(t, Options{TokenFile: file, Timeouts: listen.Timeouts{Read: time.Minute}})
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /v1/buffer/events HTTP/1.1\r\nHost: b\r\nContent-Length: 100000000\r\n\r\npartial"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer while the body is outstanding: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("%d, close %v: want 401 and the connection closed", resp.StatusCode, resp.Close)
	}
}

func TestParseTokens(t *testing.T) {
	got, err := reader.ParseTokens([]byte("# comment\n\n  " + tokenA + "  \r\n" + tokenB + "\n"))
	if err != nil || len(got) != 2 || got[0] != tokenA || got[1] != tokenB {
		t.Fatalf("%q %v", got, err)
	}
	for _, bad := range []string{"", "# only a comment\n", "tiny-token\n", tokenA + " x\n", "tökenA-0123456789abcdef\n"} {
		if _, err := reader.ParseTokens([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		} else if strings.Contains(err.Error(), "tiny-token") || strings.Contains(err.Error(), tokenA) {
			t.Errorf("%q: the error quotes the line: %v", bad, err)
		}
	}
}

// testPKI is a CA and certificates it signed, written as PEM files.
type testPKI struct {
	dir     string
	ca      *x509.Certificate
	caKey   *ecdsa.PrivateKey
	caFile  string
	counter int64
}

func newPKI(t *testing.T, dir string) *testPKI {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA " + dir}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(der)
	p := &testPKI{dir: dir, ca: ca, caKey: key, caFile: filepath.Join(dir, "ca.pem"), counter: 1}
	writePEM(t, p.caFile, "CERTIFICATE", der)
	return p
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// issue writes a certificate for name (server: 127.0.0.1 too) and its key; it returns the files.
func (p *testPKI) issue(t *testing.T, name string) (certFile, keyFile string) {
	t.Helper()
	return p.issueFor(t, name, []net.IP{net.ParseIP("127.0.0.1")})
}

func (p *testPKI) issueFor(t *testing.T, name string, ips []net.IP) (certFile, keyFile string) {
	t.Helper()
	p.counter++
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.counter), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		IPAddresses: ips, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(p.dir, name+".pem"), filepath.Join(p.dir, name+"-key.pem")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "EC PRIVATE KEY", kder)
	return certFile, keyFile
}

// TestBufferTLS: with a certificate the listener speaks only TLS, and a token crosses it
// encrypted; with a client CA too (mutual TLS), a reader without a certificate gets 401
// no_client_cert, one with a certificate of another CA fails the handshake, one with a
// certificate the CA signed reads every row.
func TestBufferTLS(t *testing.T) {
	pki := newPKI(t, t.TempDir())
	other := newPKI(t, t.TempDir())
	srvCert, srvKey := pki.issue(t, "buffer")
	cliCert, cliKey := pki.issue(t, "reader")
	strangerCert, strangerKey := other.issue(t, "stranger")
	file := filepath.Join(t.TempDir(), "tokens")
	writeTokens(t, file, tokenA)

	t.Run("token over TLS", func(t *testing.T) {
		s, want, _ := authService(t, Options{TokenFile: file, TLS: listen.TLSOptions{CertFile: srvCert, KeyFile: srvKey}})
		if code, err := plainGet("http://" + s.Addr() + "/v1/buffer/events"); err == nil && code < 400 {
			t.Fatalf("plain HTTP answered %d", code)
		}
		tc, err := reader.ClientTLS(pki.caFile, "", "")
		if err != nil {
			t.Fatal(err)
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		if code, _, _ := rawGet(t, hc, "https://"+s.Addr()+"/v1/buffer/events", ""); code != http.StatusUnauthorized {
			t.Fatalf("TLS without a token: %d", code)
		}
		if got, err := readSum(&reader.Client{Addr: "https://" + s.Addr(), HTTP: hc, Token: tokenA}); err != nil || got != want {
			t.Fatalf("TLS with the token: %+v %v", got, err)
		}
	})

	t.Run("mutual TLS", func(t *testing.T) {
		s, want, m := authService(t, Options{TLS: listen.TLSOptions{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: pki.caFile}})
		url := "https://" + s.Addr()
		client := func(cert, key string) *http.Client {
			tc, err := reader.ClientTLS(pki.caFile, cert, key)
			if err != nil {
				t.Fatal(err)
			}
			return &http.Client{Transport: &http.Transport{TLSClientConfig: tc}}
		}
		_, err := readSum(&reader.Client{Addr: url, HTTP: client("", "")})
		var se *reader.StatusError
		if !errors.As(err, &se) || se.Code != http.StatusUnauthorized || !strings.Contains(err.Error(), "--buffer-tls-cert-file") {
			t.Fatalf("no client certificate: %v", err)
		}
		if n := testutil.ToFloat64(m.Unauthorized.WithLabelValues(reader.UnauthorizedNoClientCert)); n != 1 {
			t.Fatalf("siglake_buffer_unauthorized_total{reason=no_client_cert} %v", n)
		}
		if _, err := readSum(&reader.Client{Addr: url, HTTP: client(strangerCert, strangerKey)}); err == nil {
			t.Fatal("a certificate of another CA reads")
		}
		if got, err := readSum(&reader.Client{Addr: url, HTTP: client(cliCert, cliKey)}); err != nil || got != want {
			t.Fatalf("with the client certificate: %+v %v", got, err)
		}
	})

	t.Run("bad files fail the start by name", func(t *testing.T) {
		h := newHarness(t, nil)
		for _, c := range []struct {
			o    Options
			name string
		}{
			{Options{TLS: listen.TLSOptions{CertFile: srvCert, KeyFile: cliKey}}, "SIGLAKE_BUFFER_TLS_CERT_FILE"},
			{Options{TLS: listen.TLSOptions{CertFile: srvCert, KeyFile: srvKey, ClientCAFile: srvKey}}, "SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE"},
			{Options{TokenFile: srvKey}, "SIGLAKE_BUFFER_TOKEN_FILE"},
		} {
			c.o.Addr, c.o.WALDir = "127.0.0.1:0", h.e.WAL
			if s, err := Start(c.o, h.e.Lake.LoadTable, nil, h.e.Log); err == nil || !strings.Contains(err.Error(), c.name) {
				if s != nil {
					s.Close()
				}
				t.Errorf("%s: %v", c.name, err)
			}
		}
	})
}

func plainGet(url string) (int, error) {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
