package sidecar

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// madvCold is Linux's MADV_COLD (5.4+, include/uapi/asm-generic/mman-common.h): the syscall package
// does not name it.
const madvCold = 20

// releaseBinaryPages unmaps the pages of the executable's read-only mappings (code, read-only
// data, the pc-value tables) from this process. Package initialisation touches pages spread
// over the whole 75 MB binary (360-odd init functions, iceberg-go's substrait catalogue parse),
// and the kernel maps them 64 KiB or a large folio at a time, so an idle sidecar kept 33-49 MiB
// of its binary mapped that it never ran again. The pages stay in the page cache: what the loops
// run faults back in at once (a minor fault), the rest is no longer counted in the RSS.
// MADV_COLD first moves them to the inactive list, which container_memory_working_set_bytes
// excludes and which the kernel reclaims first under the pod's limit. Only mappings that are
// never written are touched (MADV_DONTNEED on a written private page would lose its data); on
// any failure the pages simply stay mapped.
func releaseBinaryPages() {
	var st syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &st); err != nil {
		return
	}
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return
	}
	defer f.Close()
	ino := strconv.FormatUint(st.Ino, 10)
	var ranges [][2]uintptr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// address perms offset dev inode path
		fs := strings.Fields(sc.Text())
		if len(fs) < 6 || fs[4] != ino || strings.ContainsAny(fs[1], "ws") {
			continue
		}
		lo, hi, ok := strings.Cut(fs[0], "-")
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || b <= a {
			continue
		}
		ranges = append(ranges, [2]uintptr{uintptr(a), uintptr(b - a)})
	}
	// Read all of maps before changing any mapping; a kernel without MADV_COLD refuses it (EINVAL)
	// and the pages are unmapped all the same.
	for _, r := range ranges {
		syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1], madvCold)
		syscall.Syscall(syscall.SYS_MADVISE, r[0], r[1], syscall.MADV_DONTNEED)
	}
}
