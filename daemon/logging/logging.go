// Package logging builds the daemon's zap logger (human-readable by default,
// as `oc logs` readers expect; JSON on request) and routes client-go's klog
// into it.
package logging

import (
	"fmt"

	"github.com/go-logr/zapr"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
)

// New returns a logger writing to stderr in the given format ("text" or
// "json"), and makes klog write through it.
func New(format string, debug bool) (*zap.Logger, error) {
	var cfg zap.Config
	switch format {
	case "text", "":
		cfg = zap.NewDevelopmentConfig()
		cfg.Development = false
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalLevelEncoder
		cfg.EncoderConfig.EncodeTime = zapcore.RFC3339TimeEncoder
		cfg.DisableStacktrace = true
	case "json":
		cfg = zap.NewProductionConfig()
		cfg.EncoderConfig.EncodeTime = zapcore.RFC3339TimeEncoder
	default:
		return nil, fmt.Errorf("--log-format %q: want text or json", format)
	}
	cfg.Sampling = nil
	if debug {
		cfg.Level = zap.NewAtomicLevelAt(zap.DebugLevel)
	} else {
		cfg.Level = zap.NewAtomicLevelAt(zap.InfoLevel)
	}
	log, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("building the logger: %w", err)
	}
	klog.SetLogger(zapr.NewLogger(log.Named("client-go")))
	return log, nil
}
