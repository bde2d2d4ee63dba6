package gomem

import (
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// written lives in the binary's data mapping (file-backed, private): releasing a page of it that
// the process wrote would bring back the file's bytes, so releaseBinaryPages must leave it alone.
var written = [8]byte{'s', 'i', 'g', 'l', 'a', 'k', 'e', '.'}

// statusKiB is a "Name: N kB" line of /proc/self/status.
func statusKiB(t *testing.T, name string) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status:", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no " + name + " in /proc/self/status")
	return 0
}

// smapsAnonymous is the Anonymous of each mapping in /proc/self/smaps, by start address.
func smapsAnonymous(t *testing.T) map[uintptr]int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip("no /proc/self/smaps:", err)
	}
	out := map[uintptr]int64{}
	var start uintptr
	for _, line := range strings.Split(string(b), "\n") {
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if !strings.HasSuffix(fs[0], ":") {
			lo, _, _ := strings.Cut(fs[0], "-")
			a, err := strconv.ParseUint(lo, 16, 64)
			if err != nil {
				t.Fatalf("smaps header %q: %v", line, err)
			}
			start = uintptr(a)
		} else if fs[0] == "Anonymous:" {
			n, err := strconv.ParseInt(fs[1], 10, 64)
			if err != nil {
				t.Fatalf("smaps %q: %v", line, err)
			}
			out[start] = n
		}
	}
	return out
}

// TestReleaseBinaryPages: unmapping the binary's never-written pages takes them out of the RSS,
// and the process runs on (code and read-only data fault back in), its written data intact. Every
// mapping advised holds no anonymous page, and no anonymous page is dropped: in a PIE or
// externally linked build (`make test` runs this test as both) the relocated GNU_RELRO segment is
// r--p yet written, and dropping it crashes the process.
func TestReleaseBinaryPages(t *testing.T) {
	written[7] = '!'
	debug.FreeOSMemory() // nothing left for the scavenger to return while we measure RssAnon
	anonBefore := statusKiB(t, "RssAnon")
	before := statusKiB(t, "RssFile")
	ranges := releaseBinaryPages()
	after := statusKiB(t, "RssFile")
	anonAfter := statusKiB(t, "RssAnon")
	var released int64
	for _, r := range ranges {
		released += r.rss
	}
	t.Logf("%d mappings advised, %d KiB resident in them; file-backed RSS %d KiB before, %d KiB after; anonymous %d KiB before, %d KiB after",
		len(ranges), released>>10, before, after, anonBefore, anonAfter)
	if len(ranges) == 0 {
		t.Fatal("no mapping of the binary advised")
	}
	anon := smapsAnonymous(t)
	for _, r := range ranges {
		n, ok := anon[r.addr]
		if !ok || n != 0 {
			t.Errorf("advised mapping %#x+%#x: Anonymous %d kB (found %v), want 0", r.addr, r.size, n, ok)
		}
	}
	// 512 KiB of slack for the runtime returning heap pages between the two reads; a dropped
	// written segment of the binary (PIE's GNU_RELRO) is megabytes.
	if anonAfter < anonBefore-512 {
		t.Errorf("anonymous RSS fell from %d to %d KiB: written pages of the binary were dropped", anonBefore, anonAfter)
	}
	if after > before/2 {
		t.Errorf("file-backed RSS %d KiB after releasing the binary's pages, was %d KiB", after, before)
	}
	if string(written[:]) != "siglake!" {
		t.Fatalf("written data reverted to the file's: %q", written)
	}
}

// TestUnwrittenMappings: of the executable's mappings only the private, non-writable ones with no
// anonymous page are chosen; a r--p mapping the loader wrote (GNU_RELRO) is not.
func TestUnwrittenMappings(t *testing.T) {
	const smaps = `00400000-00800000 r-xp 00000000 08:01 42 /bin/siglake
Size:               4096 kB
Rss:                2048 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
00800000-00900000 r--p 00400000 08:01 42 /bin/siglake
Rss:                 512 kB
Anonymous:             0 kB
00900000-00a00000 r--p 00500000 08:01 42 /bin/siglake
Rss:                 256 kB
Anonymous:            12 kB
00a00000-00b00000 rw-p 00600000 08:01 42 /bin/siglake
Rss:                  64 kB
Anonymous:             0 kB
00b00000-00c00000 r--s 00000000 08:01 42 /bin/siglake
Rss:                  64 kB
Anonymous:             0 kB
00c00000-00d00000 r--p 00000000 08:01 43 /lib/other.so
Rss:                  64 kB
Anonymous:             0 kB
00d00000-00e00000 r--p 00000000 08:01 42 /bin/siglake
Rss:                  64 kB
`
	got := unwrittenMappings(strings.NewReader(smaps), "42")
	want := []pageRange{{0x400000, 0x400000, 2048 << 10}, {0x800000, 0x100000, 512 << 10}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
