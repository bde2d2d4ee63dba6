package gomem

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvCold is Linux's MADV_COLD (5.4+, include/uapi/asm-generic/mman-common.h): the syscall package
// does not name it.
const madvCold = 20

// pageRange is one mapping releaseBinaryPages advised: its address, its length and the bytes of it
// that were resident (smaps' Rss) just before.
type pageRange struct {
	addr, size uintptr
	rss        int64
}

// releaseBinaryPages unmaps the pages of the executable's never-written mappings (code, read-only
// data, the pc-value tables) from this process, and returns the mappings it advised. Package
// initialisation touches pages spread over the whole 75 MB binary (360-odd init functions,
// iceberg-go's substrait catalogue parse), and the kernel maps them 64 KiB or a large folio at a
// time, so an idle sidecar kept 33-49 MiB of its binary mapped that it never ran again. The pages
// stay in the page cache: what the loops run faults back in at once (a minor fault), the rest is
// no longer counted in the RSS. MADV_COLD first moves them to the inactive list, which
// container_memory_working_set_bytes excludes and which the kernel reclaims first under the pod's
// limit.
//
// MADV_DONTNEED on a private page the process wrote would bring back the file's bytes, and a
// read-only mapping is no proof that it was never written: a PIE or externally linked build has
// a GNU_RELRO segment, mapped r--p, whose pointers the dynamic loader relocated before making it
// read-only. So a mapping is advised only when /proc/self/smaps shows it private, not writable,
// backed by the executable's inode and with no anonymous (copy-on-write) pages at all: a private
// mapping with none was never written, and dropping its pages loses nothing (which also makes an
// inode shared by another file's mapping harmless). On any failure the pages simply stay mapped.
func releaseBinaryPages() []pageRange {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return nil
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return nil
	}
	// Read all of smaps before changing any mapping.
	ranges := unwrittenMappings(f, strconv.FormatUint(st.Ino, 10))
	f.Close()
	// A kernel without MADV_COLD refuses it (EINVAL) and the pages are unmapped all the same.
	for _, r := range ranges {
		syscall.Syscall(syscall.SYS_MADVISE, r.addr, r.size, madvCold)
		syscall.Syscall(syscall.SYS_MADVISE, r.addr, r.size, syscall.MADV_DONTNEED)
	}
	return ranges
}

// unwrittenMappings reads an smaps listing and returns the mappings of inode ino that are private,
// not writable and hold no anonymous pages. A mapping whose Anonymous line is missing or unreadable
// is left out.
func unwrittenMappings(smaps io.Reader, ino string) []pageRange {
	var out []pageRange
	var cur pageRange
	// cand: the current mapping is the executable's and not writable; anon: its Anonymous is
	// known and 0.
	cand, anon := false, false
	flush := func() {
		if cand && anon {
			out = append(out, cur)
		}
		cand, anon = false, false
	}
	sc := bufio.NewScanner(smaps)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		if !strings.HasSuffix(fs[0], ":") {
			// A mapping's header: address perms offset dev inode [path].
			flush()
			if len(fs) < 6 || fs[4] != ino || len(fs[1]) < 4 || fs[1][3] != 'p' || strings.Contains(fs[1], "w") {
				continue
			}
			lo, hi, ok := strings.Cut(fs[0], "-")
			a, err1 := strconv.ParseUint(lo, 16, 64)
			b, err2 := strconv.ParseUint(hi, 16, 64)
			if !ok || err1 != nil || err2 != nil || b <= a {
				continue
			}
			cur, cand = pageRange{addr: uintptr(a), size: uintptr(b - a)}, true
			continue
		}
		if !cand || len(fs) < 2 {
			continue
		}
		switch fs[0] {
		case "Rss:":
			if n, err := strconv.ParseInt(fs[1], 10, 64); err == nil {
				cur.rss = n << 10
			}
		case "Anonymous:":
			n, err := strconv.ParseInt(fs[1], 10, 64)
			anon = err == nil && n == 0
		}
	}
	if sc.Err() != nil {
		return nil
	}
	flush()
	return out
}
