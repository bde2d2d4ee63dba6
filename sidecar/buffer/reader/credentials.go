package reader

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
)

// The credentials a reader presents and the buffer checks: the token file format and the CA file.

// TokensAccepted says what a token file holds, for errors.
const TokensAccepted = "one token per line (several during a rotation, all accepted; blank lines and lines starting with # are skipped), each at least 16 characters, printable ASCII without spaces (e.g. head -c 32 /dev/urandom | base64)"

// minTokenLen keeps guessable tokens out: 16 characters of base64 are 96 bits.
const minTokenLen = 16

// ParseTokens reads a token file's content.
func ParseTokens(data []byte) ([]string, error) {
	var out []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(line) < minTokenLen {
			// Only the line number: the line may be a token, and errors go to logs.
			return nil, fmt.Errorf("line %d is shorter than %d characters", i+1, minTokenLen)
		}
		for _, r := range line {
			if r <= ' ' || r > '~' {
				return nil, fmt.Errorf("line %d has a character other than printable ASCII without spaces", i+1)
			}
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return nil, errors.New("no token in it")
	}
	return out, nil
}

// CertPool reads PEM CA certificates.
func CertPool(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("no PEM certificate in it")
	}
	return pool, nil
}
