package groupcommit

import (
	"time"

	"go.uber.org/zap"

	"github.com/siglake/siglake/sidecar/claim"
)

// ClaimLog logs what a committer claim manager does (claim.Observer): which tables this process
// took, lost and gave up. The stream claims' metrics count the drain's claims only.
type ClaimLog struct{ Log *zap.Logger }

var _ claim.Observer = ClaimLog{}

func (ClaimLog) Committed(claim.CommitOutcome) {}
func (ClaimLog) Held(int)                      {}
func (ClaimLog) Skipped(int)                   {}
func (ClaimLog) Fenced()                       {}
func (ClaimLog) TrimFailed(error)              {}

func (l ClaimLog) Taken(table string, epoch uint64) {
	l.Log.Info("committer claim taken: this process commits and maintains the table", zap.String("table", table), zap.Uint64("epoch", epoch))
}

func (l ClaimLog) TakenOver(table, previous string, expired time.Time, epoch uint64) {
	l.Log.Warn("committer claim taken over after its holder stopped renewing it", zap.String("table", table),
		zap.String("previous_holder", previous), zap.Time("expired", expired), zap.Uint64("epoch", epoch))
}

func (l ClaimLog) Released(table string, share, live int) {
	l.Log.Info("committer claim released to even out the shares", zap.String("table", table), zap.Int("share", share), zap.Int("live_claimers", live))
}

func (l ClaimLog) ReleasedAll(n int) {
	l.Log.Info("committer claims released", zap.Int("properties", n))
}

func (l ClaimLog) Lost(table, holder string, epoch uint64) {
	l.Log.Warn("committer claim lost: another process holds it now; this one stops committing and maintaining the table",
		zap.String("table", table), zap.String("holder", holder), zap.Uint64("epoch", epoch))
}

func (l ClaimLog) TickFailed(err error) {
	l.Log.Warn("committer claim tick failed; claims not renewed expire and fence this process", zap.Error(err))
}
