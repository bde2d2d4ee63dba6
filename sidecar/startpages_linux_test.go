package sidecar

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// written lives in the binary's data mapping (file-backed, private): releasing a page of it that
// the process wrote would bring back the file's bytes, so releaseBinaryPages must leave it alone.
var written = [8]byte{'s', 'i', 'g', 'l', 'a', 'k', 'e', '.'}

func rssFileKiB(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no RssFile in /proc/self/status")
	return 0
}

// TestReleaseBinaryPages: unmapping the binary's read-only pages takes them out of the RSS, and
// the process runs on (code and read-only data fault back in), its written data intact.
func TestReleaseBinaryPages(t *testing.T) {
	written[7] = '!'
	before := rssFileKiB(t)
	releaseBinaryPages()
	after := rssFileKiB(t)
	t.Logf("file-backed RSS %d KiB before, %d KiB after", before, after)
	if after > before/2 {
		t.Fatalf("file-backed RSS %d KiB after releasing the binary's pages, was %d KiB", after, before)
	}
	if string(written[:]) != "siglake!" {
		t.Fatalf("written data reverted to the file's: %q", written)
	}
}
