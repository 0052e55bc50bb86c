package engine

import (
	"context"

	"go.uber.org/zap"
)

type logKey struct{}

// WithLog returns ctx carrying log. The runner gives each step's gates and
// Run a context with its logger (node, config and step fields), so that
// the adapters a step calls log their decisions with the same fields.
func WithLog(ctx context.Context, log *zap.Logger) context.Context {
	return context.WithValue(ctx, logKey{}, log)
}

// LogFrom returns the logger ctx carries, or fallback when it carries none.
func LogFrom(ctx context.Context, fallback *zap.Logger) *zap.Logger {
	if l, ok := ctx.Value(logKey{}).(*zap.Logger); ok && l != nil {
		return l
	}
	return fallback
}
