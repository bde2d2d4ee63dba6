package sidecar

import (
	"io/fs"
	"testing"

	"github.com/siglake/siglake/merge"
)

// TestDefaultGoMemLimit: without GOMEMLIMIT the process sets 0.9 of the cgroup limit (v2, then
// v1); no limit ("max", v1's unlimited value, no cgroup files) sets none, and any GOMEMLIMIT,
// "off" included, is left to the runtime; GOMEMLIMIT="" is unset, as the runtime reads it.
func TestDefaultGoMemLimit(t *testing.T) {
	const v2, v1 = "/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"
	unset := func(string) (string, bool) { return "", false }
	env := func(v string) func(string) (string, bool) {
		return func(k string) (string, bool) { return v, k == "GOMEMLIMIT" }
	}
	for _, c := range []struct {
		name  string
		files map[string]string
		env   func(string) (string, bool)
		want  int64
	}{
		{"no cgroup", nil, unset, 0},
		{"v2 max", map[string]string{v2: "max\n"}, unset, 0},
		{"v1 unlimited", map[string]string{v1: "9223372036854771712\n"}, unset, 0},
		{"v2 limit", map[string]string{v2: "536870912\n"}, unset, 536870912 * 9 / 10},
		{"v1 limit", map[string]string{v1: "1073741824\n"}, unset, 1073741824 * 9 / 10},
		{"explicit", map[string]string{v2: "536870912\n"}, env("400MiB"), 0},
		{"off", map[string]string{v2: "536870912\n"}, env("off"), 0},
		{"empty", map[string]string{v2: "536870912\n"}, env(""), 536870912 * 9 / 10}, // the runtime's unset too
	} {
		cg := merge.CgroupMemoryLimitFrom(func(p string) ([]byte, error) {
			if v, ok := c.files[p]; ok {
				return []byte(v), nil
			}
			return nil, fs.ErrNotExist
		})
		if got := defaultGoMemLimit(c.env, cg); got != c.want {
			t.Errorf("%s: GOMEMLIMIT default %d, want %d", c.name, got, c.want)
		}
	}
}

// TestDefaultGCPercent: without GOGC the process sets DefaultGCPercent; any GOGC, "off" included,
// is left to the runtime; GOGC="" is unset, as the runtime reads it.
func TestDefaultGCPercent(t *testing.T) {
	for _, c := range []struct {
		env    map[string]string
		want   int
		wantOK bool
	}{
		{nil, DefaultGCPercent, true},
		{map[string]string{"GOGC": "100"}, 0, false},
		{map[string]string{"GOGC": "off"}, 0, false},
		{map[string]string{"GOGC": ""}, DefaultGCPercent, true}, // the runtime's unset too
		{map[string]string{"GOMEMLIMIT": "400MiB"}, DefaultGCPercent, true},
	} {
		got, ok := defaultGCPercent(func(k string) (string, bool) { v, ok := c.env[k]; return v, ok })
		if got != c.want || ok != c.wantOK {
			t.Errorf("env %v: GOGC default %d %v, want %d %v", c.env, got, ok, c.want, c.wantOK)
		}
	}
}
