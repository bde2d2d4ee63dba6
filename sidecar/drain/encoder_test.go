package drain

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/siglake/siglake/merge/writer"
)

// TestDrainEncoder: under the default (auto) the drain's files are encoded by parquet-go, and
// --merge-parquet-encoder arrow takes them back to arrow-go; the batch's log line says which.
// Both lakes hold every sealed row once.
func TestDrainEncoder(t *testing.T) {
	defer writer.SetDefaultEncoder(writer.EncoderDefault)
	for _, c := range []struct{ set, want writer.Encoder }{
		{writer.EncoderDefault, writer.EncoderParquetGo},
		{writer.EncoderAuto, writer.EncoderParquetGo},
		{writer.EncoderArrow, writer.EncoderArrow},
	} {
		writer.SetDefaultEncoder(c.set)
		e := newEnv(t, nil)
		core, logs := observer.New(zap.InfoLevel)
		e.drain.Log = zap.New(core)
		want := e.writeSegments("events", 2, 3000, 5, time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
		if _, err := e.drain.Cycle(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		if got := e.tableSum("events"); got != want {
			t.Fatalf("encoder %q: table holds %+v, sealed %+v", c.set, got, want)
		}
		lines := logs.FilterMessage("drained batch").All()
		if len(lines) == 0 {
			t.Fatalf("encoder %q: no drained batch logged", c.set)
		}
		for _, l := range lines {
			if got := l.ContextMap()["encoder"]; got != string(c.want) {
				t.Errorf("process encoder %q: a batch's files encoded by %v, want %q", c.set, got, c.want)
			}
		}
	}
}
