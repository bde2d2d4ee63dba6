package sidecar

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestDemo keeps the README's first command true: the demo runs on the embedded default, drains,
// compacts and finds every sealed row in its table exactly once.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	err := RunDemo(context.Background(), DemoOptions{Dir: t.TempDir(), Duration: 4 * time.Second, Rate: 5000}, &out, zap.NewNop())
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out.String())
	}
	s := out.String()
	for _, want := range []string{"EXACTLY ONCE", "running maintenance passes", "siglake inspect events"} {
		if !strings.Contains(s, want) {
			t.Fatalf("demo output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "false") {
		t.Fatalf("a table's rows differ from the sealed rows:\n%s", s)
	}
}
