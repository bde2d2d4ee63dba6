package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/siglake/siglake/sidecar"
	"github.com/siglake/siglake/sidecar/gomem"
	"github.com/siglake/siglake/sidecar/rowsum"
)

// soakLimit is the pod memory limit the soak runs under: the process gets GOMEMLIMIT as the chart
// renders it for this limit (goMemLimitRatio 0.9), and its peak RSS must stay under the limit.
const soakLimit = 512 << 20

// TestMemorySoak runs the real binary under the GOMEMLIMIT of a 512 MiB pod while walgen writes
// at a steady rate into three tables, maintenance rewrites them, a deletion request executes and
// /debug/status is polled. Peak RSS, sampled from /proc and the kernel's high-water mark, stays
// under the limit for the whole run; every row is there exactly once (the request's rows gone);
// every status poll shows the budget's shares inside its limit. The short version takes about a
// minute; SIGLAKE_SOAK_SECS sets the ingest time of the long one (docs/testing.md).
func TestMemorySoak(t *testing.T) {
	ingest := soakTime(t, 20*time.Second)
	const rate = 8000 // rows per second, about 2 MB/s of WAL: a busy ingest pod
	s := newSite(t)
	ratio := gomem.DefaultGoMemLimitRatio
	s.extraEnv = append(s.extraEnv, fmt.Sprintf("GOMEMLIMIT=%d", int64(soakLimit*ratio)))
	// Default commit batching (32 MiB or 10 s), rewrites every second.
	r := s.start(nil, "--commit-batch-target-mb", "32", "--commit-batch-max-age-secs", "10", "--recluster-interval-secs", "1",
		"--delete-cancel-period", "0")
	watch := watchMemory(t, r)

	// Phase 1: steady ingest with late rows (overlapping files for the rewrites).
	first := s.walgenAtRate("pod-0", rate, ingest, 31, "0.05")
	r.waitDrained(120 * time.Second)

	// A deletion request over what is committed, executed while phase 2 ingests. Phase 2 has no
	// late rows, so none of its rows falls before the request's end (the time it was recorded).
	billing := iceberg.EqualTo(iceberg.Reference("service"), "billing")
	deleted := s.scanSum("events", billing)
	if deleted.Rows == 0 {
		t.Fatal("setup: no billing rows in events")
	}
	// The request stores its execution time from the recorder's period: 0, as the compactor's.
	cmd := exec.Command(bin, "delete-request", "--catalog", s.catalog, "--warehouse", s.warehouse, "--delete-cancel-period", "0",
		"--table", "events", "--where", "service=billing", "--reason", "soak")
	cmd.Env = append(os.Environ(), s.extraEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("delete-request: %v\n%s", err, out)
	}
	time.Sleep(10 * time.Millisecond) // phase 2's first timestamp comes after the request's end
	second := s.walgenAtRate("pod-0", rate, ingest/2, 32, "0")
	r.waitDrained(120 * time.Second)
	waitFor(t, 120*time.Second, "the deletion request to be executed", func() bool {
		return r.scrape().sum("siglake_delete_requests_done_total", `table="events"`) >= 1
	})
	m := r.scrape()
	peak := watch.stop()
	r.stop()

	rewrites := m.sum("siglake_compactor_rewrites_total", `outcome="committed"`)
	t.Logf("peak RSS %.1f MiB (high-water mark %.1f MiB) of a %d MiB limit; %d status polls; %v rewrites committed; budget %.0f MiB, %v waits",
		float64(peak.sampled)/(1<<20), float64(peak.hwm)/(1<<20), soakLimit>>20, peak.polls, rewrites,
		m.sum("siglake_memory_budget_limit_bytes", "")/(1<<20), m.sum("siglake_memory_budget_waits_total", ""))
	if peak.sampled == 0 || peak.polls == 0 {
		t.Fatalf("nothing sampled: %+v", peak)
	}
	if peak.hwm > soakLimit || peak.sampled > soakLimit {
		t.Fatalf("peak RSS %d bytes (high-water mark %d) exceeds the %d-byte limit", peak.sampled, peak.hwm, soakLimit)
	}
	if rewrites == 0 {
		t.Fatal("no rewrite committed: maintenance did not run under load")
	}

	want := first.Fingerprint
	want.Merge(second.Fingerprint)
	want.Rows -= deleted.Rows
	want.Sum -= deleted.Sum // row hashes add up modulo 2^64, so they subtract too
	var got rowsum.Sum
	for _, name := range soakTables {
		got.Merge(s.tableSum(name))
	}
	if got != want {
		t.Fatalf("tables hold %+v, want every sealed row once without the deleted ones %+v", got, want)
	}
	if n := m.sum("siglake_delete_rows_deleted_total", `table="events"`); n != float64(deleted.Rows) {
		t.Fatalf("the request deleted %v rows, want the %d billing rows committed before it", n, deleted.Rows)
	}
}

var soakTables = []string{"events", "logs", "audit"}

// soakTime is the soak's ingest time: short by default, SIGLAKE_SOAK_SECS for the long run.
func soakTime(t *testing.T, short time.Duration) time.Duration {
	v := os.Getenv("SIGLAKE_SOAK_SECS")
	if v == "" {
		return short
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		t.Fatalf("SIGLAKE_SOAK_SECS=%q: accepted: whole seconds above 0", v)
	}
	return time.Duration(n) * time.Second
}

// TestMemorySoakBudgetWaits makes the budget wait for certain: WAL buffer reads run back to back
// beside the drain, and the budget is too small for a read's share and a drain batch's share at
// once (a read may hold 63 of its 64 MiB; each table's 2 s batch needs several). So a batch waits
// for the read in flight, and a read that starts while a batch holds its share waits for it. siglake_memory_budget_waits_total must count waits, peak RSS stay under the
// pod's limit, and every sealed row be in its table exactly once.
func TestMemorySoakBudgetWaits(t *testing.T) {
	ingest := soakTime(t, 8*time.Second)
	const rate = 8000
	s := newSite(t)
	ratio := gomem.DefaultGoMemLimitRatio
	s.extraEnv = append(s.extraEnv, fmt.Sprintf("GOMEMLIMIT=%d", int64(soakLimit*ratio)))
	r, c := s.startBuffered("--commit-batch-target-mb", "32", "--commit-batch-max-age-secs", "2",
		"--memory-budget-bytes", fmt.Sprint(64<<20), "--buffer-memory-bytes", fmt.Sprint(63<<20),
		"--buffer-max-readers", "1", "--buffer-retain-after-drain", "0")
	watch := watchMemory(t, r)
	stop := make(chan struct{})
	var reader sync.WaitGroup
	codes := map[int]int{} // the reader's answers by status, for the log
	reader.Add(1)
	go func() { // reads back to back, one table after the other
		defer reader.Done()
		client := &http.Client{Timeout: 30 * time.Second}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			resp, err := client.Get("http://" + c.Addr + "/v1/buffer/" + soakTables[i%len(soakTables)])
			if err != nil {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			codes[resp.StatusCode]++
			if resp.StatusCode != http.StatusOK {
				// Refused (the budget is held, or no reader slot): retrying back to back ran
				// ~390 requests a second and took a core of a 2-core CI machine. 20 ms still
				// asks again well within a drain cycle, so reads keep making the loops wait.
				time.Sleep(20 * time.Millisecond)
			}
		}
	}()
	sealed := s.walgenAtRate("pod-0", rate, ingest, 33, "0.05")
	r.waitDrained(120 * time.Second)
	close(stop)
	reader.Wait()
	m := r.scrape()
	peak := watch.stop()
	r.stop()

	waits := m.sum("siglake_memory_budget_waits_total", "")
	t.Logf("peak RSS %.1f MiB (high-water mark %.1f MiB) of a %d MiB limit; buffer answers by status %v; waits: %v drain, %v wal_buffer",
		float64(peak.sampled)/(1<<20), float64(peak.hwm)/(1<<20), soakLimit>>20, codes,
		m.sum("siglake_memory_budget_waits_total", `loop="drain"`), m.sum("siglake_memory_budget_waits_total", `loop="wal_buffer"`))
	if codes[http.StatusOK] == 0 {
		t.Fatal("no WAL buffer read was served: nothing held the budget beside the drain")
	}
	if waits == 0 {
		t.Fatal("siglake_memory_budget_waits_total is 0: the budget never made a loop wait")
	}
	// Peaks measured 84-95 MiB with the 64 MiB budget (5 runs), and 93 MiB with a 1 GiB one
	// (nothing waits): at this ingest rate the drain's batches are small, so the peak cannot tell
	// a budget kept from one ignored by a few MiB (the waits above show the budget works). The
	// bound is twice what was measured, for a loaded machine's noise: it fails a loop holding
	// about 100 MiB past what the budget lets the loops hold (two more buffer answers of 63 MiB,
	// or a drain batch several times its 32 MiB target), which the 512 MiB limit would pass; it
	// does not catch a loop ignoring the budget by a few tens of MiB.
	const peakBound = 200 << 20
	if peak.sampled == 0 || peak.hwm > peakBound || peak.sampled > peakBound {
		t.Fatalf("peak RSS %d bytes (high-water mark %d); want at most %d bytes with a 64 MiB budget", peak.sampled, peak.hwm, peakBound)
	}
	var got rowsum.Sum
	for _, name := range soakTables {
		got.Merge(s.tableSum(name))
	}
	if got != sealed.Fingerprint {
		t.Fatalf("tables hold %+v, want every sealed row once %+v", got, sealed.Fingerprint)
	}
}

// walgenAtRate writes rate rows a second for d into the soak's tables and returns what it sealed.
func (s *site) walgenAtRate(stream string, rate int, d time.Duration, seed int, lateFraction string) walgenResult {
	s.t.Helper()
	rows := int(float64(rate) * d.Seconds())
	return s.walgen(stream, rows, seed, "--rate", strconv.Itoa(rate), "--batch-rows", "1000", "--segment-mb", "4",
		"--roll-age", "2s", "--late-fraction", lateFraction, "--tables", strings.Join(soakTables, ","))
}

// memoryWatch samples the process's RSS from /proc every 50 ms and polls /debug/status every
// 250 ms, checking that the budget's shares stay inside its limit.
type memoryWatch struct {
	pid  int
	done chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	peak memoryPeak
}

type memoryPeak struct {
	sampled, hwm int64 // bytes: the largest VmRSS sampled, the kernel's VmHWM at the end
	polls        int
}

func watchMemory(t *testing.T, r *running) *memoryWatch {
	pid := r.cmd.Process.Pid
	w := &memoryWatch{pid: pid, done: make(chan struct{})}
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		for {
			if v, ok := procStatusBytes(pid, "VmRSS"); ok {
				w.mu.Lock()
				w.peak.sampled = max(w.peak.sampled, v)
				w.mu.Unlock()
			}
			select {
			case <-w.done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	go func() {
		defer w.wg.Done()
		c := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-w.done:
				return
			case <-time.After(250 * time.Millisecond):
			}
			resp, err := c.Get("http://" + r.addr + "/debug/status")
			if err != nil {
				continue
			}
			var st sidecar.StatusReport
			err = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if err != nil {
				t.Errorf("/debug/status: %v", err)
				continue
			}
			if st.Memory == nil || st.Memory.LimitBytes <= 0 || st.Memory.HeldBytes > st.Memory.LimitBytes {
				t.Errorf("/debug/status memory: %+v", st.Memory)
			}
			w.mu.Lock()
			w.peak.polls++
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the sampling and returns the peaks; call it before the process exits.
func (w *memoryWatch) stop() memoryPeak {
	close(w.done)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.peak.hwm, _ = procStatusBytes(w.pid, "VmHWM")
	return w.peak
}

func procStatusBytes(pid int, key string) (int64, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}
