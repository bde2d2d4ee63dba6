// Package keys is the gossip encryption keys: the key file's format, the
// fingerprint that names a key without revealing it, and the rotation of a
// running member's keyring.
package keys

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/memberlist"
)

// Accepted says what a key file may hold, for error messages.
const Accepted = "one or more base64 keys of 16, 24 or 32 bytes (AES-128/192/256), one per line; the first is used to send, all are accepted"

// Parse reads a key file: one base64 key per line (blank lines and lines
// starting with # are skipped). The first key is the one this member sends
// with; every key is accepted from peers, which is what lets a key be
// rotated without splitting the cluster. A key listed twice counts once.
func Parse(data []byte) ([][]byte, error) {
	var keys [][]byte
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(line)
		if err != nil {
			// `head -c 32 /dev/urandom | base64 -w0` pads; some tools do not.
			k, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(line, "="))
		}
		if err != nil {
			return nil, fmt.Errorf("line %d is not base64", i+1)
		}
		if err := memberlist.ValidateKey(k); err != nil {
			return nil, fmt.Errorf("line %d decodes to %d bytes, not 16, 24 or 32", i+1, len(k))
		}
		if !contains(keys, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, errors.New("no key in the file")
	}
	return keys, nil
}

// Fingerprint names a key on status pages and in logs without revealing
// it: the first 8 bytes of its SHA-256, in hex. Operators compare it across
// pods during a rotation.
func Fingerprint(k []byte) string {
	if len(k) == 0 {
		return ""
	}
	s := sha256.Sum256(k)
	return hex.EncodeToString(s[:8])
}

func contains(keys [][]byte, k []byte) bool {
	for _, x := range keys {
		if bytes.Equal(x, k) {
			return true
		}
	}
	return false
}

// ErrNoKeyring is returned by Install on a member started without keys:
// memberlist cannot turn encryption on at runtime, and a member that did
// would split from its plaintext peers anyway.
var ErrNoKeyring = errors.New("gossip started without an encryption key: a key takes effect at the next start")

// Install puts keys into the keyring kr at runtime: keys[0] becomes the key
// this member sends with, every key in keys is accepted, and installed keys
// not in keys are removed. It reports whether anything changed. Adding
// precedes switching, and switching precedes removing, so at no moment is a
// key that a peer may still send with refused (the rotation procedure in
// docs/gossip.md relies on every member holding the new key before any sends
// with it). kr nil (a member started without keys) is ErrNoKeyring.
func Install(kr *memberlist.Keyring, keys [][]byte) (changed bool, err error) {
	if len(keys) == 0 {
		return false, errors.New("no key given")
	}
	for i, k := range keys {
		if err := memberlist.ValidateKey(k); err != nil {
			return false, fmt.Errorf("key %d: %w", i+1, err)
		}
	}
	if kr == nil {
		return false, ErrNoKeyring
	}
	before := kr.GetKeys()
	for _, k := range keys {
		if err := kr.AddKey(k); err != nil {
			return false, err
		}
	}
	if err := kr.UseKey(keys[0]); err != nil {
		return false, err
	}
	for _, k := range kr.GetKeys() {
		if !contains(keys, k) {
			if err := kr.RemoveKey(k); err != nil {
				return false, err
			}
		}
	}
	return differ(before, kr.GetKeys()), nil
}

// differ reports whether the keyring after holds other keys than before, or
// sends with another.
func differ(before, after [][]byte) bool {
	if len(before) != len(after) || !bytes.Equal(before[0], after[0]) {
		return true
	}
	for _, k := range after {
		if !contains(before, k) {
			return true
		}
	}
	return false
}

// State is what a keyring holds, for status pages: how many keys are
// accepted and the fingerprint of the one sent with ("" without encryption).
type State struct {
	Keys    int    `json:"keys"`
	Primary string `json:"primary,omitempty"`
}

// Of returns the state of kr; the zero State when kr is nil (no encryption).
func Of(kr *memberlist.Keyring) State {
	if kr == nil {
		return State{}
	}
	return State{Keys: len(kr.GetKeys()), Primary: Fingerprint(kr.GetPrimaryKey())}
}
