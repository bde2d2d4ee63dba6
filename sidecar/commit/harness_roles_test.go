package commit

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/siglake/siglake/sidecar/internal/catalogtest"
	"github.com/siglake/siglake/sidecar/lake"
	"github.com/siglake/siglake/sidecar/peermsg"
)

// The bench's roles: what a goroutine is doing for, as a pprof label. The committer's CPU is
// the CPU profile's samples labelled committer: its Run and every goroutine Run starts carry the
// label, and so do its transport handlers (a LocalHub runs a handler on a goroutine the sender
// starts, so a handler is relabelled to its receiver's role). The commit hooks read the same
// label from the context to tell the committer's commit attempts from the maintainer's.
const (
	rolePod        = "pod"
	roleCommitter  = "committer"
	roleMaintainer = "maintainer"
)

// labelled runs f with ctx and the goroutine labelled role.
func labelled(ctx context.Context, role string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("role", role), f)
}

// roleTransport runs its member's handlers labelled with the member's role.
type roleTransport struct {
	peermsg.Transport
	role string
}

func (t roleTransport) Handle(kind byte, f func(from string, msg []byte)) {
	t.Transport.Handle(kind, func(from string, msg []byte) {
		labelled(context.Background(), t.role, func(context.Context) { f(from, msg) })
	})
}

// capPool bounds a pod Lake's PostgreSQL pool to one connection, closed after a second idle, so
// a thousand pods (a thousand Lakes) stay inside the server's connection limit: a pod drains
// one batch at a time, and in group mode it touches the catalog about once a minute (its table
// cache).
func capPool(t testing.TB, l *lake.Lake) {
	t.Helper()
	var inner catalog.Catalog
	l.WrapCatalog(func(c catalog.Catalog) catalog.Catalog { inner = c; return c })
	p, ok := inner.(interface{ DB() *sql.DB })
	if !ok {
		t.Fatalf("catalog %T has no connection pool to cap", inner)
	}
	p.DB().SetMaxOpenConns(1)
	p.DB().SetConnMaxIdleTime(time.Second)
}

// roleCommits counts catalog commit attempts by the role label of their context.
type roleCommits struct {
	mu                       sync.Mutex
	attempts, refused, other map[string]int
	errs                     map[string]string // one refusal's text per role
}

func newRoleCommits() *roleCommits {
	return &roleCommits{attempts: map[string]int{}, refused: map[string]int{}, other: map[string]int{}, errs: map[string]string{}}
}

// hook counts l's commit attempts.
func (rc *roleCommits) hook(l *lake.Lake) {
	catalogtest.Hook(l, func(ctx context.Context, id table.Identifier, reqs []table.Requirement, ups []table.Update, next catalogtest.CommitFunc) (table.Metadata, string, error) {
		md, loc, err := next(ctx, id, reqs, ups)
		role, _ := pprof.Label(ctx, "role")
		rc.mu.Lock()
		defer rc.mu.Unlock()
		rc.attempts[role]++
		switch {
		case err == nil:
		case lake.IsConflict(err):
			rc.refused[role]++
			rc.errs[role] = err.Error()
		default:
			rc.other[role]++
			rc.errs[role+" other"] = err.Error()
		}
		return md, loc, err
	})
}

func (rc *roleCommits) String() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var b strings.Builder
	for _, role := range []string{roleCommitter, roleMaintainer, ""} {
		if n := rc.attempts[role]; n > 0 {
			fmt.Fprintf(&b, "%s: %d attempts, %d refused as conflicts, %d failed otherwise; ", role, n, rc.refused[role], rc.other[role])
		}
	}
	for k, v := range rc.errs {
		fmt.Fprintf(&b, "[%s: %.200s] ", k, v)
	}
	return b.String()
}

// roleCPU profiles the process's CPU until stop, which returns the CPU seconds sampled per
// role label ("" for unlabelled: the runtime's background GC, network read loops, the test).
// With SIGLAKE_BENCH_PROFILE=FILE the profile is also written there, for
// `go tool pprof -tagfocus role=committer`.
func roleCPU() (stop func() (map[string]float64, error), err error) {
	var buf bytes.Buffer
	if err := pprof.StartCPUProfile(&buf); err != nil {
		return nil, fmt.Errorf("start CPU profile: %w", err)
	}
	return func() (map[string]float64, error) {
		pprof.StopCPUProfile()
		if path := os.Getenv("SIGLAKE_BENCH_PROFILE"); path != "" {
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				return nil, fmt.Errorf("SIGLAKE_BENCH_PROFILE %s: %w", path, err)
			}
		}
		return profileByLabel(buf.Bytes(), "role")
	}, nil
}

// profileByLabel sums a gzipped pprof CPU profile's cpu nanoseconds by the string label key,
// reading the protobuf directly (profile.proto: Profile.sample_type 1, sample 2, string_table 6;
// Sample.value 2, label 3; Label.key 1, str 2; ValueType.type 1).
func profileByLabel(gz []byte, key string) (map[string]float64, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, fmt.Errorf("read CPU profile: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("read CPU profile: %w", err)
	}
	var strs []string
	var types []int64        // sample_type's type string indexes
	var samples [][2][]int64 // values, label (key, str) pairs
	err = eachField(raw, func(num protowire.Number, typ protowire.Type, b []byte) error {
		switch num {
		case 6:
			strs = append(strs, string(b))
		case 1:
			return eachField(b, func(n protowire.Number, _ protowire.Type, v []byte) error {
				if n == 1 {
					types = append(types, varint(v))
				}
				return nil
			})
		case 2:
			s, err := parseSample(b)
			samples = append(samples, s)
			return err
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	cpu := -1
	for i, ti := range types {
		if int(ti) < len(strs) && strs[ti] == "cpu" {
			cpu = i
		}
	}
	if cpu < 0 {
		return nil, fmt.Errorf("CPU profile has no cpu sample type (%d types)", len(types))
	}
	out := map[string]float64{}
	for _, s := range samples {
		role := ""
		for i := 0; i+1 < len(s[1]); i += 2 {
			if strs[s[1][i]] == key {
				role = strs[s[1][i+1]]
			}
		}
		if cpu < len(s[0]) {
			out[role] += float64(s[0][cpu]) / 1e9
		}
	}
	return out, nil
}

// parseSample reads a Sample's values (packed or not) and its string labels' (key, str) indexes.
func parseSample(b []byte) (s [2][]int64, err error) {
	err = eachField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == 2 && typ == protowire.BytesType:
			for len(v) > 0 {
				x, n := protowire.ConsumeVarint(v)
				if n < 0 {
					return protowire.ParseError(n)
				}
				s[0], v = append(s[0], int64(x)), v[n:]
			}
		case num == 2:
			s[0] = append(s[0], varint(v))
		case num == 3:
			var k, str int64
			if err := eachField(v, func(n protowire.Number, _ protowire.Type, lv []byte) error {
				if n == 1 {
					k = varint(lv)
				} else if n == 2 {
					str = varint(lv)
				}
				return nil
			}); err != nil {
				return err
			}
			s[1] = append(s[1], k, str)
		}
		return nil
	})
	return s, err
}

// eachField calls f with every field of a protobuf message: a varint field's value is passed as
// its encoding (varint decodes it), a length-delimited field's as its bytes.
func eachField(b []byte, f func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("CPU profile: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			var m int
			v, m = protowire.ConsumeBytes(b)
			n = m
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n >= 0 {
				v = b[:n]
			}
		}
		if n < 0 {
			return fmt.Errorf("CPU profile: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}

func varint(b []byte) int64 {
	x, _ := protowire.ConsumeVarint(b)
	return int64(x)
}

// TestRoleCPU: CPU spent under a role label is read back from the profile under that role, and
// unlabelled CPU is not. It runs with the bench (SIGLAKE_BENCH=1), whose CPU numbers it guards.
func TestRoleCPU(t *testing.T) {
	if os.Getenv("SIGLAKE_BENCH") != "1" {
		t.Skip("SIGLAKE_BENCH=1 runs it with the group commit harness")
	}
	stop, err := roleCPU()
	if err != nil {
		t.Skipf("CPU profiling already on: %v", err)
	}
	spin := func(d time.Duration) { // d of this thread's CPU, however busy the machine is
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for start := threadCPU(t); threadCPU(t)-start < d; {
		}
	}
	labelled(context.Background(), roleCommitter, func(context.Context) { spin(400 * time.Millisecond) })
	spin(100 * time.Millisecond)
	got, err := stop()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CPU by role: %v", got)
	if got[roleCommitter] < 0.2 || got[roleCommitter] > 0.6 {
		t.Fatalf("committer role sampled %.2f s, spun 0.4 s", got[roleCommitter])
	}
	if got[""] > 0.3 {
		t.Fatalf("unlabelled %.2f s, spun 0.1 s", got[""])
	}
}

// threadCPU is the calling OS thread's user and system CPU time.
func threadCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1, &ru); err != nil { // RUSAGE_THREAD
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
