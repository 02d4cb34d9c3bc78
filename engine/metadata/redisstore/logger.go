package redisstore

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// SetClientLogger sends the go-redis client's own log lines (failed dials,
// pool events) to l at level Warn with component=go-redis; a nil l
// discards them. go-redis keeps one logger per process, so this affects
// every go-redis client in the process: call it once from main. Without
// it go-redis prints to stderr with the standard log package.
func SetClientLogger(l *slog.Logger) {
	if l == nil {
		l = slog.New(slog.DiscardHandler)
	}
	redis.SetLogger(slogLogging{l: l})
}

// slogLogging adapts slog to go-redis's logging interface.
type slogLogging struct{ l *slog.Logger }

func (s slogLogging) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	if !s.l.Enabled(ctx, slog.LevelWarn) {
		return
	}
	s.l.Log(ctx, slog.LevelWarn, fmt.Sprintf(format, v...), "component", "go-redis")
}
