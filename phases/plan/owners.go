package plan

import (
	"github.com/coreos/ignition/v2/config/v3_5/types"
)

// MaxID is the largest usable user or group ID: IDs are 32-bit, and
// 2^32-1 is (uid_t)-1, which chown takes as "leave unchanged".
const MaxID = 1<<32 - 2

// checkOwnerIDs refuses numeric owner IDs that no file can have: a negative
// one would make chown a no-op (-1) and one past MaxID would be truncated
// (2^32 becomes root). It reports whether both are fine.
func (p *parser) checkOwnerIDs(field string, f types.File) bool {
	ok := true
	for _, o := range []struct {
		sub string
		id  *int
	}{{"user.id", f.User.ID}, {"group.id", f.Group.ID}} {
		if o.id != nil && (*o.id < 0 || *o.id > MaxID) {
			p.add(field+"."+o.sub, "ID %d is outside 0..%d", *o.id, MaxID)
			ok = false
		}
	}
	return ok
}
