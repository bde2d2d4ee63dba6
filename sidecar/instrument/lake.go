package instrument

import (
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/siglake/siglake/sidecar/lake/objstore"
)

// cost logs a objstore.Cost as requests per kind plus totals.
type cost objstore.Cost

func (c cost) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	t := objstore.Cost(c).Total()
	enc.AddInt64("requests", t.Requests)
	enc.AddInt64("errors", t.Errors)
	enc.AddInt64("bytes_read", t.BytesRead)
	enc.AddInt64("bytes_written", t.BytesWritten)
	for _, op := range objstore.Ops {
		if v, ok := c[op]; ok && v.Requests > 0 {
			enc.AddInt64(string(op), v.Requests)
		}
	}
	return nil
}

// CostField is c as the log field "objstore", or nothing when no request was made (a local
// warehouse).
func CostField(c objstore.Cost) zap.Field {
	if c.Total().Requests == 0 {
		return zap.Skip()
	}
	return zap.Object("objstore", cost(c))
}

// ObjectStoreCollector exports lake's object-store accounting (objstore.Counts) as
// Prometheus metrics (register it once per registry).
func ObjectStoreCollector() prometheus.Collector {
	return objStoreCollector{counts: objstore.Counts}
}

var (
	descRequests = prometheus.NewDesc("siglake_objstore_requests_total",
		"Object-store requests by kind (get, ranged_get, head, put, multipart, list, delete, other) and table; SDK retries count.",
		[]string{"op", "table"}, nil)
	descErrors = prometheus.NewDesc("siglake_objstore_request_errors_total",
		"Object-store requests that failed, by kind, table and class (network, 4xx, 5xx).",
		[]string{"op", "table", "class"}, nil)
	descRead = prometheus.NewDesc("siglake_objstore_read_bytes_total",
		"Response body bytes read from the object store, by kind and table.", []string{"op", "table"}, nil)
	descWritten = prometheus.NewDesc("siglake_objstore_written_bytes_total",
		"Request body bytes sent to the object store, by kind and table.", []string{"op", "table"}, nil)
)

// objStoreCollector reads the counts at every scrape: lake counts at the SDK's HTTP client,
// where no registry is at hand.
type objStoreCollector struct {
	counts func() []objstore.Count
}

func (objStoreCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descRequests
	ch <- descErrors
	ch <- descRead
	ch <- descWritten
}

func (c objStoreCollector) Collect(ch chan<- prometheus.Metric) {
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	for _, n := range c.counts() {
		op := string(n.Op)
		counter(descRequests, n.Requests, op, n.Table)
		counter(descRead, n.BytesRead, op, n.Table)
		counter(descWritten, n.BytesWritten, op, n.Table)
		for _, e := range []struct {
			class string
			v     int64
		}{{"network", n.ErrNetwork}, {"4xx", n.Err4xx}, {"5xx", n.Err5xx}} {
			if e.v > 0 {
				counter(descErrors, e.v, op, n.Table, e.class)
			}
		}
	}
}
