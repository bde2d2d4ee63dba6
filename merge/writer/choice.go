package writer

import (
	"fmt"
	"strings"
	"sync/atomic"
)

// Choice is a process-wide choice among named Parquet codecs, as Encoder and merge.Decoder are:
// the accepted names, their parsing, and a default the sidecar sets once at start for every
// caller whose options leave the value empty.
type Choice[T ~string] struct {
	What     string // what is chosen, for errors: "parquet encoder"
	Accepted []T
	Fallback T // when neither the value nor the process default names one
	def      atomic.Value
}

// Parse parses a name, case-insensitively.
func (c *Choice[T]) Parse(s string) (T, error) {
	names := make([]string, len(c.Accepted))
	for i, a := range c.Accepted {
		if strings.EqualFold(strings.TrimSpace(s), string(a)) {
			return a, nil
		}
		names[i] = string(a)
	}
	return "", fmt.Errorf("%s %q: accepted: %s", c.What, s, strings.Join(names, ", "))
}

// SetDefault sets the value Resolve gives for an empty one.
func (c *Choice[T]) SetDefault(v T) { c.def.Store(v) }

// Resolve is v, or the process default when v is empty, or Fallback.
func (c *Choice[T]) Resolve(v T) T {
	if v != "" {
		return v
	}
	if d, ok := c.def.Load().(T); ok && d != "" {
		return d
	}
	return c.Fallback
}
