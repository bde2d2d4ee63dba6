package listen

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"sync"

	"github.com/siglake/siglake/sidecar/buffer/reader"
)

// reloading keeps what load makes of some files, and makes it again when one of them changes
// (a Secret volume's symlink swap, cert-manager's renewal), so certificates rotate without a
// restart. A reload that fails keeps the last good value: a half-written pair must not take the
// listener down.
type reloading[T any] struct {
	paths []string
	load  func() (T, error)

	mu   sync.Mutex
	seen []os.FileInfo
	val  T
	ok   bool
}

func (r *reloading[T]) get() (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := make([]os.FileInfo, len(r.paths))
	same := r.ok
	for i, p := range r.paths {
		fi, err := os.Stat(p)
		if err != nil {
			if r.ok {
				return r.val, nil
			}
			return r.val, err
		}
		seen[i] = fi
		if same && (!os.SameFile(fi, r.seen[i]) || !fi.ModTime().Equal(r.seen[i].ModTime()) || fi.Size() != r.seen[i].Size()) {
			same = false
		}
	}
	if same {
		return r.val, nil
	}
	v, err := r.load()
	if err != nil {
		if r.ok {
			return r.val, nil
		}
		return v, err
	}
	r.val, r.seen, r.ok = v, seen, true
	return v, nil
}

// TLSOptions are the buffer listener's TLS files; an empty CertFile is plain HTTP.
type TLSOptions struct {
	CertFile, KeyFile string
	// ClientCAFile turns on mutual TLS (Auth.ClientCerts).
	ClientCAFile string
}

// ServerTLS is the listener's tls.Config, nil without a certificate. Every file is read once
// here, so a bad one fails the start with the option's name.
func ServerTLS(o TLSOptions) (*tls.Config, error) {
	if o.CertFile == "" {
		return nil, nil
	}
	cert := &reloading[*tls.Certificate]{paths: []string{o.CertFile, o.KeyFile}, load: func() (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		return &c, err
	}}
	if _, err := cert.get(); err != nil {
		return nil, fmt.Errorf("--buffer-tls-cert-file / SIGLAKE_BUFFER_TLS_CERT_FILE %q with --buffer-tls-key-file / SIGLAKE_BUFFER_TLS_KEY_FILE %q: %w; accepted: a PEM certificate (chain) and its PEM private key", o.CertFile, o.KeyFile, err)
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cert.get() }}
	if o.ClientCAFile == "" {
		return base, nil
	}
	cas := &reloading[*x509.CertPool]{paths: []string{o.ClientCAFile}, load: func() (*x509.CertPool, error) { return reader.CertPool(o.ClientCAFile) }}
	if _, err := cas.get(); err != nil {
		return nil, fmt.Errorf("--buffer-tls-client-ca-file / SIGLAKE_BUFFER_TLS_CLIENT_CA_FILE %q: %w; accepted: PEM CA certificates", o.ClientCAFile, err)
	}
	// Verified when given, not required: a connection without one reaches Auth, which answers
	// 401 and counts it instead of a handshake failure nobody sees.
	base.ClientAuth = tls.VerifyClientCertIfGiven
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		pool, err := cas.get()
		if err != nil {
			return nil, err
		}
		c := base.Clone()
		c.GetConfigForClient, c.ClientCAs = nil, pool
		return c, nil
	}
	return base, nil
}
