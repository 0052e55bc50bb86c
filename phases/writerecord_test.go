package phases_test

import (
	"context"
	"testing"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases/progress"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// The write step is saved done, with the reason its condition shows,
// before its journal is dropped: a crash between the two must leave a
// record that knows the write happened (a journal found then is known
// committed), never a committed write the record does not know of.
func TestWriteRecordedBeforeCommit(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/var/lib/kubelet/config.json", "x")}, h, cl, units, w)
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h.recordAtCommit == nil {
		t.Fatal("no record was saved before the commit")
	}
	rec, err := progress.Unmarshal(h.recordAtCommit)
	if err != nil {
		t.Fatal(err)
	}
	st := rec.Step("write")
	if st == nil {
		t.Fatalf("record at commit has steps %v, want write done", rec.Steps)
	}
	if want := status.Reason(status.AppliedFilesAndOS); st.Reason != want || st.Message == "" {
		t.Errorf("write step %+v, want reason %s and a message", st, want)
	}
}
