package search

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/siglake/siglake/sidecar/lake/objstore"
)

// Explain is what a search considered, pruned and read, per stage (--explain). At every stage
// Considered = the sum of Pruned + Read.
type Explain struct {
	// Files: every live file of the snapshot; pruned by the manifests, by their footers, or not
	// reached before the limit was full; read = footer kept and row groups scanned.
	Files Stage `json:"files"`
	// RowGroups of the files whose footer was read and kept.
	RowGroups Stage `json:"row_groups"`
	// FooterBytes and FooterRequests are the reads that opened files: Parquet footers and the
	// Puffin sidecars read for them. DataBytes and DataRequests read row groups.
	FooterBytes    int64 `json:"footer_bytes"`
	FooterRequests int64 `json:"footer_requests"`
	DataBytes      int64 `json:"data_bytes"`
	DataRequests   int64 `json:"data_requests"`
	// RowsExamined were decoded and evaluated; RowsMatched passed the predicate; RowsReturned
	// were printed (the limit stops the scan, so matched rows past it are not counted).
	RowsExamined int64 `json:"rows_examined"`
	RowsMatched  int64 `json:"rows_matched"`
	RowsReturned int64 `json:"rows_returned"`
	// ReturnedBytes is the size of the rows returned: the text of their values as CSV prints
	// them, without separators (the denominator of read amplification).
	ReturnedBytes int64 `json:"returned_bytes"`
	// MaxOpenStreams is the most files open at once in the merge; OverlapDepth the most the
	// planned files could need (it sizes each stream's share of the memory budget).
	MaxOpenStreams int   `json:"max_open_streams"`
	OverlapDepth   int   `json:"overlap_depth"`
	MemoryBudget   int64 `json:"memory_budget_bytes"`
	BatchRows      int64 `json:"batch_rows"`
	// ObjectStore is what the S3 client measured for the table during the search (manifests
	// included); empty on a local warehouse.
	ObjectStore *objstore.OpCost `json:"object_store,omitempty"`
	// ObjectStoreOps is ObjectStore by request kind: each opened file and Puffin sidecar is one
	// whole-object GET (get), each read of it one ranged GET (ranged_get).
	ObjectStoreOps objstore.Cost `json:"object_store_ops,omitempty"`
	// PuffinIndexesRead counts Puffin index blobs read (and used) for --where columns.
	PuffinIndexesRead int64 `json:"puffin_indexes_read"`
	// IndexesNotRead counts Puffin index blobs left unread because they are larger than the tested
	// columns of their file: scanning those was cheaper than reading the index.
	IndexesNotRead int64 `json:"indexes_not_read"`
	// Warnings are metadata the search could not use (it scanned instead).
	Warnings []string `json:"warnings,omitempty"`
}

// Stage counts one stage's units.
type Stage struct {
	Considered int64            `json:"considered"`
	Pruned     map[Reason]int64 `json:"pruned"`
	Read       int64            `json:"read"`
}

func (s *Stage) prune(r Reason) {
	if s.Pruned == nil {
		s.Pruned = map[Reason]int64{}
	}
	s.Pruned[r]++
}

// PrunedTotal sums Pruned.
func (s Stage) PrunedTotal() int64 {
	var n int64
	for _, v := range s.Pruned {
		n += v
	}
	return n
}

// BytesRead is every byte the search read from data and index files.
func (e *Explain) BytesRead() int64 { return e.FooterBytes + e.DataBytes }

// Requests is every read call (one ranged GET each on S3).
func (e *Explain) Requests() int64 { return e.FooterRequests + e.DataRequests }

// Amplification is bytes read over bytes returned (0 when nothing was returned).
func (e *Explain) Amplification() float64 {
	if e.ReturnedBytes == 0 {
		return 0
	}
	return float64(e.BytesRead()) / float64(e.ReturnedBytes)
}

func (e *Explain) footerRead(d ioTotals) {
	e.FooterBytes += d.bytes
	e.FooterRequests += d.requests
}

// ioTotals is a snapshot of an ioCount.
type ioTotals struct{ bytes, requests int64 }

func (n *ioCount) snapshot() ioTotals { return ioTotals{n.bytes.Load(), n.requests.Load()} }

func (t ioTotals) sub(o ioTotals) ioTotals {
	return ioTotals{t.bytes - o.bytes, t.requests - o.requests}
}

// Print writes the report as a table.
func (e *Explain) Print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stage\tconsidered\tpruned\tread\tpruned by")
	for _, st := range []struct {
		name string
		s    Stage
	}{{"files", e.Files}, {"row groups", e.RowGroups}} {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", st.name, st.s.Considered, st.s.PrunedTotal(), st.s.Read, reasons(st.s.Pruned))
	}
	fmt.Fprintf(tw, "rows\t%d examined\t\t%d matched\t%d returned (%d bytes)\n", e.RowsExamined, e.RowsMatched, e.RowsReturned, e.ReturnedBytes)
	fmt.Fprintf(tw, "bytes read\t%d\t\t\tfooters %d in %d requests, row groups %d in %d requests\n",
		e.BytesRead(), e.FooterBytes, e.FooterRequests, e.DataBytes, e.DataRequests)
	fmt.Fprintf(tw, "read amplification\t%.1f\t\t\tbytes read / bytes returned\n", e.Amplification())
	fmt.Fprintf(tw, "open streams\t%d\t\t\tat the deepest point (overlap depth of the planned files %d; %d rows a batch, memory budget %d bytes)\n",
		e.MaxOpenStreams, e.OverlapDepth, e.BatchRows, e.MemoryBudget)
	if e.ObjectStore != nil {
		fmt.Fprintf(tw, "object store\t%d requests\t\t\t%d bytes read (manifests included)\n", e.ObjectStore.Requests, e.ObjectStore.BytesRead)
	}
	if e.PuffinIndexesRead+e.IndexesNotRead > 0 {
		fmt.Fprintf(tw, "puffin indexes read\t%d\n", e.PuffinIndexesRead)
	}
	if e.IndexesNotRead > 0 {
		fmt.Fprintf(tw, "indexes not read\t%d\t\t\tPuffin index blobs larger than the columns they would spare: scanned instead\n", e.IndexesNotRead)
	}
	for _, w := range e.Warnings {
		fmt.Fprintf(tw, "warning\t%s\n", w)
	}
	return tw.Flush()
}

func reasons(m map[Reason]int64) string {
	var parts []string
	for r, n := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", r, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}
