package membudget

import (
	"context"
	"errors"
	"fmt"
)

// ErrStopping is the error of work that did not start, or a wait for memory that ended, because
// the process was asked to stop (SIGTERM). It wraps context.Canceled.
var ErrStopping = fmt.Errorf("the process is stopping: %w", context.Canceled)

// Stopping is ErrStopping once stop (nil: never) is done, else nil.
func Stopping(stop context.Context) error {
	if stop != nil && stop.Err() != nil {
		return ErrStopping
	}
	return nil
}

// IsStopping reports whether err ended a loop's work because the process is stopping: ErrStopping,
// or ctx, the loop's work context, cancelled (the shutdown timeout ran out, a wait for memory
// included). That is no failure. A deadline is not a stop: work cut by context.DeadlineExceeded
// failed like any other.
func IsStopping(ctx context.Context, err error) bool {
	return err != nil && (errors.Is(err, ErrStopping) || errors.Is(err, context.Canceled) && errors.Is(ctx.Err(), context.Canceled))
}

// ReserveFunc takes bytes of a loop's share of the budget; release gives them back (Share.Reserve
// has this shape, so a loop's package can take it without importing this one).
type ReserveFunc func(ctx context.Context, bytes int64) (release func(), err error)

// ReserveForWork takes bytes through reserve (nil: takes none) for work about to start under ctx.
// A wait for memory is not work in flight: the stop ends it with ErrStopping, and a share granted
// as the stop came is given back, so no work starts only for the shutdown timeout to cut it. The
// returned release is never nil when err is nil; IsStopping(ctx, err) tells a stop from a failure.
func ReserveForWork(ctx, stop context.Context, reserve ReserveFunc, bytes int64) (release func(), err error) {
	if err := Stopping(stop); err != nil {
		return nil, err
	}
	if reserve == nil {
		return func() {}, nil
	}
	wait, cancel := untilStop(ctx, stop)
	release, err = reserve(wait, bytes)
	cancel()
	if err != nil {
		return nil, err
	}
	if err := Stopping(stop); err != nil { // granted as the stop came
		release()
		return nil, err
	}
	return release, nil
}

// untilStop returns a context derived from ctx that is also cancelled, with cause ErrStopping,
// once stop is done (nil: never).
func untilStop(ctx, stop context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(ctx)
	if stop == nil {
		return c, func() { cancel(context.Canceled) }
	}
	unhook := context.AfterFunc(stop, func() { cancel(ErrStopping) })
	return c, func() { unhook(); cancel(context.Canceled) }
}
