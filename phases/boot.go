package phases

import (
	"cmp"
	"context"
	"errors"
	"strings"
	"time"
)

// boot names one boot of the node the two ways Units.BootID reads it:
// hostnamed's ID (id, "" when hostnamed could not tell) and when the node's
// systemd started (start, "t" and microseconds, always set). hostnamed is
// started on demand and may answer one read and not the next within one
// boot; comparing an ID of one form with one of the other took that for a
// reboot. Records therefore keep both: the ID (its field read by the
// release before, which compares it as it is) and the start beside it.
type boot struct{ id, start string }

// bootIDTimeout bounds a read of the boot ID: hostnamed is started on
// demand, and a start that never answers must not hold the update.
const bootIDTimeout = 5 * time.Second

// readBoot is units' boot, bounded by bootIDTimeout; the zero boot with no
// units.
func readBoot(ctx context.Context, units Units) (boot, error) {
	if units == nil {
		return boot{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, bootIDTimeout)
	defer cancel()
	id, start, err := units.BootID(ctx)
	return boot{id, start}, err
}

// mark is what a record keeps as the boot's ID: hostnamed's, else the
// start, as the release before wrote it.
func (b boot) mark() string {
	if b.id != "" {
		return b.id
	}
	return b.start
}

// save keeps the boot in a record's pair of fields.
func (b boot) save(id, start *string) { *id, *start = b.mark(), b.start }

// since reports whether the node booted since the boot a record kept as id
// and start ("" and "": none kept, false). An id that begins with "t" is a
// start (mark: hostnamed did not answer), and start is "" in a record of
// the release before. hostnamed's IDs decide when both are known, else the
// starts. A record with only hostnamed's ID, read now without one (hostnamed
// slow or failing, often right after a boot), cannot tell: an error, and
// the step tries again, rather than take a reboot for done or ask for
// another.
func (b boot) since(id, start string) (bool, error) {
	if strings.HasPrefix(id, "t") {
		id, start = "", cmp.Or(start, id)
	}
	switch {
	case id != "" && b.id != "":
		return id != b.id, nil
	case start != "" && b.start != "":
		return start != b.start, nil
	case id == "" && start == "":
		return false, nil
	}
	return false, errors.New("cannot tell whether the node booted since boot " + id +
		": hostnamed gave no boot ID, and the progress record, from an earlier release, keeps nothing else")
}
