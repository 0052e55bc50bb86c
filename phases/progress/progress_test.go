package progress

import (
	"strings"
	"testing"
)

func TestRoundTripAndVersion(t *testing.T) {
	r := New("a", "b")
	r.Finish(Step{Name: "prepare", Message: "ok"})
	r.Finish(Step{Name: "prepare", Message: "again"})
	r.RebootFromBootID = "x"
	data, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Done("prepare") || got.Done("write") || len(got.Steps) != 1 || got.Step("prepare").Message != "again" ||
		got.RebootFromBootID != "x" {
		t.Errorf("round trip: %+v", got)
	}
	if _, err := Unmarshal([]byte(`{"version":2}`)); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("other version: %v", err)
	}
	if _, err := Unmarshal([]byte(`{`)); err == nil {
		t.Error("bad JSON accepted")
	}
}

func TestForget(t *testing.T) {
	r := New("a", "b")
	for _, s := range []string{"prepare", "cordon", "other"} {
		r.Finish(Step{Name: s})
	}
	r.Forget("cordon")
	r.Forget("never-done")
	if r.Done("cordon") || !r.Done("prepare") || !r.Done("other") || len(r.Steps) != 2 {
		t.Errorf("after Forget(cordon): %+v", r.Steps)
	}
}
