package sidecar

import (
	"testing"

	"go.uber.org/zap"

	"github.com/siglake/siglake/merge"
	"github.com/siglake/siglake/merge/writer"
	"github.com/siglake/siglake/sidecar/config"
)

// TestOneShotCommandsUseTheCodecs: delete-sweep and retention rewrite files outside Process.Run,
// and take the process's --merge-parquet-encoder all the same (useCodecs sets the decoder in the
// same call; its resolution is merge's own and not visible here).
func TestOneShotCommandsUseTheCodecs(t *testing.T) {
	defer writer.SetDefaultEncoder(writer.EncoderDefault)
	defer merge.SetDefaultDecoder(merge.DecoderDefault)
	for name, build := range map[string]func(e *env){
		"delete-sweep": func(e *env) { DeleteSweeper(e.lake, e.cfg, zap.NewNop()) },
		"retention":    func(e *env) { RetentionRunner(e.lake, e.cfg, zap.NewNop()) },
	} {
		for _, enc := range []writer.Encoder{writer.EncoderParquetGo, writer.EncoderArrow} {
			writer.SetDefaultEncoder(writer.EncoderAuto)
			e := newEnv(t, func(c *config.Config) { c.MergeParquetEncoder = enc })
			build(e)
			if got := writer.EncoderDefault.Named(); got != enc {
				t.Errorf("%s with --merge-parquet-encoder %s: the process encodes with %s", name, enc, got)
			}
		}
	}
}
