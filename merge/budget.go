package merge

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

const (
	// DefaultMergeFraction of the process memory limit goes to merges; the
	// rest is the drain, the Go runtime's headroom and everything else.
	DefaultMergeFraction = 0.4
	// DefaultUnlimitedBudget is the merge budget when neither GOMEMLIMIT nor
	// a cgroup limit is set (a laptop, a test): modest, so a default run
	// never picks a path that needs more than a small pod has.
	DefaultUnlimitedBudget = 512 << 20
	// minBudget keeps a tiny limit from starving every merge, though never above half of that
	// limit: a floor above a small pod's limit would plan merges it cannot hold.
	minBudget = 32 << 20
)

// MemoryBudget is the pure rule behind DefaultMemoryBudget: the smaller of
// the two limits that are set (0 or math.MaxInt64 mean unset), times
// fraction; DefaultUnlimitedBudget when neither is set.
func MemoryBudget(goMemLimit, cgroupLimit int64, fraction float64) int64 {
	limit := smallerLimit(goMemLimit, cgroupLimit)
	if limit == 0 {
		return DefaultUnlimitedBudget
	}
	if fraction <= 0 || fraction > 1 {
		fraction = DefaultMergeFraction
	}
	return min(max(int64(float64(limit)*fraction), minBudget), limit/2)
}

// smallerLimit is the smaller of the limits that are set (0 or
// math.MaxInt64 mean unset); 0 when none is.
func smallerLimit(limits ...int64) int64 {
	limit := int64(0)
	for _, l := range limits {
		if l > 0 && l != math.MaxInt64 && (limit == 0 || l < limit) {
			limit = l
		}
	}
	return limit
}

// DefaultMemoryBudget derives the merge budget from GOMEMLIMIT (as the
// runtime sees it) and the container's cgroup memory limit.
func DefaultMemoryBudget() int64 {
	return MemoryBudget(debug.SetMemoryLimit(-1), cgroupMemoryLimit(), DefaultMergeFraction)
}

// MemoryLimit is the process memory limit the budgets derive from: the
// smaller of GOMEMLIMIT (as the runtime sees it) and the container's cgroup
// limit; 0 when neither is set.
func MemoryLimit() int64 {
	return smallerLimit(debug.SetMemoryLimit(-1), cgroupMemoryLimit())
}

// CgroupMemoryLimit is the container's cgroup memory limit (v2, then v1);
// 0 when none is set.
func CgroupMemoryLimit() int64 { return cgroupMemoryLimit() }

// cgroupMemoryLimit reads the cgroup v2 limit, then v1; 0 if neither is set.
func cgroupMemoryLimit() int64 { return CgroupMemoryLimitFrom(os.ReadFile) }

// CgroupMemoryLimitFrom is CgroupMemoryLimit reading the cgroup files through read (tests pass
// a fake file system).
func CgroupMemoryLimitFrom(read func(string) ([]byte, error)) int64 {
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := read(p)
		if err != nil {
			continue
		}
		if v, ok := parseCgroupLimit(string(b)); ok {
			return v
		}
	}
	return 0
}

// parseCgroupLimit parses a memory.max / memory.limit_in_bytes value; "max"
// and absurdly large v1 values mean no limit.
func parseCgroupLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, true
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 {
		return 0, false
	}
	if v >= 1<<62 {
		return 0, true
	}
	return v, true
}
