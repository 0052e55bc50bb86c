package systemdtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
)

func TestFakeRecordsCallsInOrder(t *testing.T) {
	ctx := context.Background()
	var f Fake
	steps := []func() error{
		func() error { return f.DaemonReload(ctx) },
		func() error { return f.Enable(ctx, "a.service", "b.service") },
		func() error { return f.Disable(ctx, "c.service") },
		func() error { return f.Mask(ctx, "d.service") },
		func() error { return f.Unmask(ctx, "d.service") },
		func() error { return f.Start(ctx, "a.service") },
		func() error { return f.Stop(ctx, "a.service") },
		func() error { return f.Restart(ctx, "a.service") },
		func() error { return f.Reload(ctx, "crio.service") },
		func() error { _, err := f.IsEnabled(ctx, "a.service"); return err },
		func() error { _, err := f.IsActive(ctx, "a.service"); return err },
		func() error { _, err := f.SystemState(ctx); return err },
		func() error { _, _, err := f.BootID(ctx); return err },
		func() error { return f.Reboot(ctx) },
		func() error { f.Close(); return nil },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := []string{
		"daemon-reload", "enable a.service b.service", "disable c.service", "mask d.service",
		"unmask d.service", "start a.service", "stop a.service", "restart a.service",
		"reload crio.service", "is-enabled a.service", "is-active a.service", "is-system-running",
		"boot-id", "reboot", "close",
	}
	if !slices.Equal(f.Calls, want) {
		t.Errorf("Calls = %q\nwant    %q", f.Calls, want)
	}
}

func TestFakeState(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name       string
		calls      func(f *Fake)
		wantEnable string
		wantActive string
	}{
		{"defaults", func(f *Fake) {}, "disabled", "inactive"},
		{"set", func(f *Fake) { f.SetEnabled("u", "static"); f.SetActive("u", "failed") }, "static", "failed"},
		{"enable start", func(f *Fake) { _ = f.Enable(ctx, "u"); _ = f.Start(ctx, "u") }, "enabled", "active"},
		{"mask stop", func(f *Fake) { _ = f.Mask(ctx, "u"); _ = f.Stop(ctx, "u") }, "masked", "inactive"},
		{"unmask", func(f *Fake) { _ = f.Mask(ctx, "u"); _ = f.Unmask(ctx, "u") }, "disabled", "inactive"},
		{"restart", func(f *Fake) { _ = f.Restart(ctx, "u") }, "disabled", "active"},
		{"reload keeps state", func(f *Fake) { f.SetActive("u", "failed"); _ = f.Reload(ctx, "u") }, "disabled", "failed"},
		{"failed start changes nothing", func(f *Fake) {
			f.SetError("start u", errors.New("boom"))
			_ = f.Start(ctx, "u")
		}, "disabled", "inactive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f Fake
			tt.calls(&f)
			if got, _ := f.IsEnabled(ctx, "u"); got != tt.wantEnable {
				t.Errorf("IsEnabled = %q, want %q", got, tt.wantEnable)
			}
			if got, _ := f.IsActive(ctx, "u"); got != tt.wantActive {
				t.Errorf("IsActive = %q, want %q", got, tt.wantActive)
			}
		})
	}
}

func TestFakeErrors(t *testing.T) {
	errVerb, errUnit := errors.New("verb"), errors.New("unit")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		set  map[string]error
		call func(ctx context.Context, f *Fake) error
		want error
	}{
		{"none", context.Background(), nil, func(ctx context.Context, f *Fake) error { return f.Start(ctx, "a") }, nil},
		{"per verb", context.Background(), map[string]error{"start": errVerb},
			func(ctx context.Context, f *Fake) error { return f.Start(ctx, "a") }, errVerb},
		{"per unit", context.Background(), map[string]error{"start a": errUnit},
			func(ctx context.Context, f *Fake) error { return f.Start(ctx, "a") }, errUnit},
		{"per unit wins", context.Background(), map[string]error{"start": errVerb, "start a": errUnit},
			func(ctx context.Context, f *Fake) error { return f.Start(ctx, "a") }, errUnit},
		{"other unit", context.Background(), map[string]error{"start b": errUnit},
			func(ctx context.Context, f *Fake) error { return f.Start(ctx, "a") }, nil},
		{"other verb", context.Background(), map[string]error{"stop a": errUnit},
			func(ctx context.Context, f *Fake) error { return f.Start(ctx, "a") }, nil},
		{"one of several units", context.Background(), map[string]error{"enable b": errUnit},
			func(ctx context.Context, f *Fake) error { return f.Enable(ctx, "a", "b") }, errUnit},
		{"cleared", context.Background(), map[string]error{"reboot": nil},
			func(ctx context.Context, f *Fake) error { return f.Reboot(ctx) }, nil},
		{"query", context.Background(), map[string]error{"is-active a": errUnit},
			func(ctx context.Context, f *Fake) error { _, err := f.IsActive(ctx, "a"); return err }, errUnit},
		{"boot id", context.Background(), map[string]error{"boot-id": errVerb},
			func(ctx context.Context, f *Fake) error { _, _, err := f.BootID(ctx); return err }, errVerb},
		{"done ctx", canceled, nil, func(ctx context.Context, f *Fake) error { return f.DaemonReload(ctx) }, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f Fake
			for k, err := range tt.set {
				f.SetError(k, err)
			}
			if err := tt.call(tt.ctx, &f); !errors.Is(err, tt.want) {
				t.Errorf("err = %v, want %v", err, tt.want)
			}
			if len(f.Calls) != 1 {
				t.Errorf("Calls = %q, want one call recorded even when it fails", f.Calls)
			}
		})
	}
}

func TestFakeBootIDAndSystemState(t *testing.T) {
	ctx := context.Background()
	var f Fake
	before, beforeStart, _ := f.BootID(ctx)
	if err := f.Reboot(ctx); err != nil {
		t.Fatal(err)
	}
	after, afterStart, _ := f.BootID(ctx)
	if before == after || beforeStart == afterStart {
		t.Errorf("BootID %q %q did not change across Reboot", before, beforeStart)
	}
	f.SetHostnamed(false)
	if id, start, _ := f.BootID(ctx); id != "" || start != afterStart {
		t.Errorf("BootID without hostnamed = %q %q, want \"\" %q", id, start, afterStart)
	}
	if s, _ := f.SystemState(ctx); s != "running" {
		t.Errorf("SystemState = %q, want running", s)
	}
	f.SetSystemState("degraded")
	if s, _ := f.SystemState(ctx); s != "degraded" {
		t.Errorf("SystemState = %q, want degraded", s)
	}
}

func TestFakeConcurrent(t *testing.T) {
	ctx := context.Background()
	var f Fake
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			unit := fmt.Sprintf("u%d.service", i)
			_ = f.Enable(ctx, unit)
			_ = f.Start(ctx, unit)
			_, _ = f.IsActive(ctx, unit)
			f.SetError("stop "+unit, errors.New("no"))
			_ = f.CallLog()
		})
	}
	wg.Wait()
	if n := len(f.CallLog()); n != 60 {
		t.Errorf("recorded %d calls, want 60", n)
	}
}
