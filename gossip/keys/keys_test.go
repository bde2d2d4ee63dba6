package keys

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

func testKey(b byte, n int) []byte { return bytes.Repeat([]byte{b}, n) }

func b64(k []byte) string { return base64.StdEncoding.EncodeToString(k) }

func TestParse(t *testing.T) {
	k16, k24, k32 := testKey(1, 16), testKey(2, 24), testKey(3, 32)
	ok := []struct {
		name, file string
		want       [][]byte
	}{
		{"one", b64(k32) + "\n", [][]byte{k32}},
		{"order kept, first sends", b64(k16) + "\n" + b64(k24) + "\n" + b64(k32), [][]byte{k16, k24, k32}},
		{"blank lines, comments, spaces, CRLF", "# rotated 2026-12\n\n  " + b64(k24) + "  \r\n" + b64(k16) + "\r\n", [][]byte{k24, k16}},
		{"duplicate counts once", b64(k16) + "\n" + b64(k16), [][]byte{k16}},
		{"unpadded", strings.TrimRight(b64(k16), "="), [][]byte{k16}},
	}
	for _, c := range ok {
		got, err := Parse([]byte(c.file))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(c.want) {
			t.Fatalf("%s: %d keys, want %d", c.name, len(got), len(c.want))
		}
		for i := range got {
			if !bytes.Equal(got[i], c.want[i]) {
				t.Fatalf("%s: key %d differs", c.name, i)
			}
		}
	}
	bad := []struct{ name, file, want string }{
		{"empty", "", "no key"},
		{"comments only", "# nothing\n\n", "no key"},
		{"not base64", "not a key!\n", "line 1 is not base64"},
		{"wrong size", b64(k16) + "\n" + b64(testKey(4, 20)), "line 2 decodes to 20 bytes, not 16, 24 or 32"},
	}
	for _, c := range bad {
		_, err := Parse([]byte(c.file))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}
