package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// statusLog records every status write's conditions.
type statusLog struct {
	all [][]metav1.Condition
}

func (s *statusLog) WriteStatus(_ context.Context, snap status.Snapshot) error {
	s.all = append(s.all, append([]metav1.Condition(nil), snap.Conditions...))
	return nil
}

func imageModeRunner(cfgs osConfigs, osu phases.OSUpdater, w *statusLog) (*phases.Runner, *host) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	r := osRunner(cfgs, h, &systemdtest.Fake{}, &writes{}, osu, progress.New("a", "b"), nil)
	conds := status.Initial(metav1.Now())
	status.WithImageMode(&conds, true, metav1.Now())
	r.Status = status.NewStager(w, time.Now, status.Snapshot{Conditions: conds})
	r.Phases = phases.List(phases.ListOptions{ImageModeStatus: true})
	return r, h
}

func condOf(conds []metav1.Condition, t string) string {
	c := status.Find(conds, t)
	if c == nil {
		return "missing"
	}
	return string(c.Status) + "/" + c.Reason + ": " + c.Message
}

// With --image-mode-status the write phase reports files, then the image
// pull and the staging, and AppliedFilesAndOS as before.
func TestImageModeStatusSplit(t *testing.T) {
	osu := &fakeOS{booted: phases.BootedOS{Image: "os:1"}}
	cfgs := osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", file("/etc/a", "1"), "os:2", "nosmt")}
	w := &statusLog{}
	r, _ := imageModeRunner(cfgs, osu, w)
	if err := r.Run(context.Background()); !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	// The write made as the staging starts: files done, OS in progress.
	var staging []metav1.Condition
	for _, c := range w.all {
		if x := status.Find(c, status.AppliedOSImage); x != nil && x.Status == metav1.ConditionUnknown {
			staging = c
			break
		}
	}
	if staging == nil {
		t.Fatal("no status write showed AppliedOSImage in progress")
	}
	for typ, want := range map[string]string{
		status.AppliedFiles:            "True/UpdateExecutedAppliedFiles: Applied 1 file",
		status.ImagePulledFromRegistry: "Unknown/UpdateExecutedImagePulledFromRegistry: Pulling OS image os:2 with fake-os",
		status.AppliedOSImage:          "Unknown/UpdateExecutedAppliedOSImage: Staging OS image os:2 and 1 kernel argument change with fake-os",
	} {
		if got := condOf(staging, typ); got != want {
			t.Errorf("while staging, %s = %q, want %q", typ, got, want)
		}
	}
	for typ, want := range map[string]string{
		status.AppliedFiles:            "True/UpdateExecutedAppliedFiles: Applied 1 file",
		status.ImagePulledFromRegistry: "True/UpdateExecutedImagePulledFromRegistry: Pulled OS image os:2 with fake-os",
		status.AppliedOSImage:          "True/UpdateExecutedAppliedOSImage: OS image os:2 and 1 kernel argument change staged with fake-os for the next boot",
	} {
		if got := condOf(r.Status.Conditions(), typ); got != want {
			t.Errorf("after the write, %s = %q, want %q", typ, got, want)
		}
	}
	if c := status.Find(r.Status.Conditions(), status.AppliedFilesAndOS); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("AppliedFilesAndOS = %+v, want True", c)
	}
	// Shown right after AppliedFilesAndOS.
	var types []string
	for _, c := range r.Status.Conditions() {
		types = append(types, c.Type)
	}
	if got := strings.Join(types, ","); !strings.Contains(got, "AppliedFilesAndOS,AppliedFiles,ImagePulledFromRegistry,AppliedOSImage,UpdatePostActionComplete") {
		t.Errorf("order %s", got)
	}
}

// A files-only update says the OS parts were not required; a failed pull
// shows in the condition that was in progress.
func TestImageModeStatusNotRequiredAndFailure(t *testing.T) {
	w := &statusLog{}
	r, _ := imageModeRunner(osConfigs{"a": osMC("a", empty, ""), "b": osMC("b", file("/etc/a", "1"), "")}, &fakeOS{}, w)
	if err := r.Run(context.Background()); err != nil && !errors.Is(err, phases.ErrRebooting) {
		t.Fatalf("Run: %v", err)
	}
	if got := condOf(r.Status.Conditions(), status.AppliedOSImage); got != "False/NotRequired: The update changes no OS image or kernel arguments" {
		t.Errorf("AppliedOSImage = %q", got)
	}
	if got := condOf(r.Status.Conditions(), status.ImagePulledFromRegistry); got != "False/NotRequired: The update changes no OS image" {
		t.Errorf("ImagePulledFromRegistry = %q", got)
	}

	osu := &fakeOS{stageErr: errors.New("pull failed"), booted: phases.BootedOS{Image: "os:1"}}
	r, _ = imageModeRunner(osConfigs{"a": osMC("a", empty, "os:1"), "b": osMC("b", empty, "os:2")}, osu, &statusLog{})
	err := r.Run(context.Background())
	if err == nil {
		t.Fatal("Run: no error, want the failed pull")
	}
	if got := condOf(r.Status.Conditions(), status.ImagePulledFromRegistry); !strings.HasPrefix(got, "Unknown/UpdateExecutedImagePulledFromRegistry: Error: staging the OS update with fake-os: pull failed") {
		t.Errorf("ImagePulledFromRegistry = %q", got)
	}
	if got := condOf(r.Status.Conditions(), status.AppliedFiles); !strings.HasPrefix(got, "True/") {
		t.Errorf("AppliedFiles = %q, want True (the files were written before the pull)", got)
	}
}

func TestWithImageMode(t *testing.T) {
	now := metav1.Now()
	conds := status.Initial(now)
	if !status.WithImageMode(&conds, true, now) || status.WithImageMode(&conds, true, now) {
		t.Fatal("adding the split conditions: want one change, then none")
	}
	if len(conds) != len(status.Order())+3 {
		t.Fatalf("%d conditions, want %d", len(conds), len(status.Order())+3)
	}
	if len(conds) > 20 {
		t.Errorf("%d conditions: the API takes at most 20", len(conds))
	}
	status.Set(&conds, metav1.Condition{Type: status.AppliedFiles, Status: metav1.ConditionTrue, Reason: "x", LastTransitionTime: now})
	status.ResetForUpdate(&conds, now)
	if c := status.Find(conds, status.AppliedFiles); c.Status != metav1.ConditionFalse || c.Reason != status.ReasonNotYetOccurred {
		t.Errorf("after a reset AppliedFiles = %+v", c)
	}
	if !status.WithImageMode(&conds, false, now) || len(conds) != len(status.Order()) {
		t.Errorf("removing the split conditions left %d", len(conds))
	}
}
