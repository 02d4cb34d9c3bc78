package demo

import (
	"context"
	"log/slog"
	"strings"
)

// unlockedNotice is the message staging logs for every arena mapped
// without mlock. Run announces the fallback once itself, so the parts'
// loggers drop the per-arena repeats.
const unlockedNotice = "staging: arena is not locked in RAM"

// dropHandler passes records to h except those whose message starts with
// prefix.
type dropHandler struct {
	h      slog.Handler
	prefix string
}

func (d dropHandler) Enabled(ctx context.Context, l slog.Level) bool { return d.h.Enabled(ctx, l) }

func (d dropHandler) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, d.prefix) {
		return nil
	}
	return d.h.Handle(ctx, r)
}

func (d dropHandler) WithAttrs(a []slog.Attr) slog.Handler {
	return dropHandler{h: d.h.WithAttrs(a), prefix: d.prefix}
}

func (d dropHandler) WithGroup(name string) slog.Handler {
	return dropHandler{h: d.h.WithGroup(name), prefix: d.prefix}
}

// quiet wraps log so that the per-arena unlocked notices are dropped.
func quiet(log *slog.Logger) *slog.Logger {
	return slog.New(dropHandler{h: log.Handler(), prefix: unlockedNotice})
}

// levelFloor drops records below min.
type levelFloor struct {
	h   slog.Handler
	min slog.Level
}

func (f levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= f.min && f.h.Enabled(ctx, l)
}

func (f levelFloor) Handle(ctx context.Context, r slog.Record) error { return f.h.Handle(ctx, r) }

func (f levelFloor) WithAttrs(a []slog.Attr) slog.Handler {
	return levelFloor{h: f.h.WithAttrs(a), min: f.min}
}

func (f levelFloor) WithGroup(name string) slog.Handler {
	return levelFloor{h: f.h.WithGroup(name), min: f.min}
}
