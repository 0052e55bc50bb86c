package phases

import (
	"context"

	"go.uber.org/zap"

	"github.com/nodeconfd/nodeconfd/phases/engine"
)

// The update's stop is the engine's (engine.Stop): its causes and signals.
var (
	// ErrStopped: the daemon shuts down; the update resumes at its next
	// start.
	ErrStopped = engine.ErrStopped
	// ErrSuperseded: the node's desired config changed before the write;
	// the steps with a Cut give back what they hold.
	ErrSuperseded = engine.ErrSuperseded
	// ErrPaused: the node was paused during the drain; its cordon is
	// given back and the update waits at its cordon.
	ErrPaused = engine.ErrPaused
	// ErrComplete ends the run early: a step found the update complete
	// (an adoption).
	ErrComplete = engine.ErrComplete
)

type (
	// Signals are where an update's stop comes from.
	Signals = engine.Signals
	// PausedError is the cause of a stop for a pause.
	PausedError = engine.PausedError
)

// WithLog returns ctx carrying log (engine.WithLog).
func WithLog(ctx context.Context, log *zap.Logger) context.Context { return engine.WithLog(ctx, log) }

// LogFrom returns the logger ctx carries, or fallback (engine.LogFrom).
func LogFrom(ctx context.Context, fallback *zap.Logger) *zap.Logger {
	return engine.LogFrom(ctx, fallback)
}
