package listen

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/buffer/reader"
)

// Auth decides who may read the buffer: a bearer token from TokenFile, a verified client
// certificate (ClientCerts), or both; each one configured is required.
type Auth struct {
	// TokenFile holds the accepted tokens (--buffer-token-file). It is re-read when it changes
	// (a Kubernetes Secret volume swaps a symlink, so the file seen through the path is a new
	// one), so a rotation needs no restart; "" takes no token.
	TokenFile string
	// ClientCerts refuses requests without a verified client certificate: the listener asks for
	// one and verifies it when given (tls.VerifyClientCertIfGiven), so that a connection without
	// one still reaches the handler and is counted and answered, not dropped in the handshake.
	ClientCerts bool
	// Metrics counts refusals; Log notes a token file that cannot be re-read. Both may be nil.
	Metrics *Metrics
	Log     *zap.Logger

	mu     sync.Mutex
	file   os.FileInfo // the token file as last read
	hashes [][sha256.Size]byte
	// failed is the failure of the last re-read ("" after a good one): each new failure (another
	// file version, another error) is counted and logged once, not at every request.
	failed string
}

// NewAuth reads the token file once: an error names the option and what it accepts, so a bad
// file fails the start, not every request.
func NewAuth(tokenFile string, clientCerts bool, m *Metrics, log *zap.Logger) (*Auth, error) {
	a := &Auth{TokenFile: tokenFile, ClientCerts: clientCerts, Metrics: m, Log: log}
	if tokenFile != "" {
		if err := a.reload(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// reload reads the token file if it changed since it was last read; called with a.mu held, or
// before a is shared.
func (a *Auth) reload() error {
	fi, err := os.Stat(a.TokenFile)
	if err == nil && a.file != nil && os.SameFile(fi, a.file) && fi.ModTime().Equal(a.file.ModTime()) && fi.Size() == a.file.Size() {
		return nil
	}
	var data []byte
	if err == nil {
		data, err = os.ReadFile(a.TokenFile)
	}
	var tokens []string
	if err == nil {
		tokens, err = reader.ParseTokens(data)
	}
	if err != nil {
		return fmt.Errorf("--buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE %q: %w; accepted: %s", a.TokenFile, err, reader.TokensAccepted)
	}
	// Hashes, so that comparing takes the same time whatever the lengths.
	hashes := make([][sha256.Size]byte, len(tokens))
	for i, t := range tokens {
		hashes[i] = sha256.Sum256([]byte(t))
	}
	a.file, a.hashes, a.failed = fi, hashes, ""
	if a.Metrics != nil {
		a.Metrics.Tokens.Set(float64(len(hashes)))
	}
	return nil
}

// tokens is the accepted set now: re-read when the file changed. A file that cannot be read or
// holds no valid token keeps the last good set (a rotation writes a whole new file; a broken one
// must not lock every reader out), which would also keep a token the update meant to revoke: so
// each failure is counted (siglake_buffer_token_reload_errors_total) and logged once.
func (a *Auth) tokens() [][sha256.Size]byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := a.reload()
	if err == nil {
		return a.hashes
	}
	key := err.Error()
	if fi, serr := os.Stat(a.TokenFile); serr == nil {
		key += fmt.Sprint(fi.ModTime().UnixNano(), fi.Size())
	}
	if key != a.failed {
		a.failed = key
		if a.Metrics != nil {
			a.Metrics.TokenReloadErrors.Inc()
		}
		if a.Log != nil {
			a.Log.Warn("re-reading the WAL buffer token file failed; the tokens read before stay accepted, revoked ones included, until a good file replaces it", zap.Error(err))
		}
	}
	return a.hashes
}

// Refresh re-reads the token file if it changed, so that the token metrics follow an update
// without waiting for a request.
func (a *Auth) Refresh() {
	if a != nil && a.TokenFile != "" {
		a.tokens()
	}
}

// Check returns "" when r may read, else the reason it may not.
func (a *Auth) Check(r *http.Request) string {
	if a.ClientCerts && (r.TLS == nil || len(r.TLS.VerifiedChains) == 0) {
		return reader.UnauthorizedNoClientCert
	}
	if a.TokenFile == "" {
		return ""
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		return reader.UnauthorizedMissing
	}
	scheme, token, ok := strings.Cut(h, " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return reader.UnauthorizedMalformed
	}
	sum := sha256.Sum256([]byte(token))
	match := 0
	for _, t := range a.tokens() {
		match |= subtle.ConstantTimeCompare(sum[:], t[:]) // every token compared: no early exit
	}
	if match == 0 {
		return reader.UnauthorizedInvalid
	}
	return ""
}

// Wrap refuses requests without valid credentials before h sees them: 401, counted by reason.
// The refusal closes the connection, so not even the server's keep-alive drain reads a body.
func (a *Auth) Wrap(h http.Handler) http.Handler {
	if a == nil || (a.TokenFile == "" && !a.ClientCerts) {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reason := a.Check(r)
		if reason == "" {
			h.ServeHTTP(w, r)
			return
		}
		if a.Metrics != nil {
			a.Metrics.Unauthorized.WithLabelValues(reason).Inc()
		}
		if a.Log != nil {
			a.Log.Debug("WAL buffer request refused: no valid credentials", zap.String("reason", reason), zap.String("remote", r.RemoteAddr))
		}
		msg := "the WAL buffer needs credentials: "
		if reason == reader.UnauthorizedNoClientCert {
			msg += "a client certificate signed by the sidecar's --buffer-tls-client-ca-file"
		} else {
			msg += "Authorization: Bearer <a token of the sidecar's --buffer-token-file / SIGLAKE_BUFFER_TOKEN_FILE>"
		}
		if a.TokenFile != "" {
			challenge := `Bearer realm="siglake-buffer"`
			if reason == reader.UnauthorizedInvalid || reason == reader.UnauthorizedMalformed {
				challenge += `, error="invalid_token"` // RFC 6750 3.1
			}
			w.Header().Set("WWW-Authenticate", challenge)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(reader.ErrorBody{Error: msg, Reason: reason})
	})
}
