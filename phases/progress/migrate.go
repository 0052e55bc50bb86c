package progress

import (
	"encoding/json"
	"fmt"
)

// migrateV1 turns a record of version 1 into one of this version, in
// memory; the next save writes it as such. The migration is one way: a
// daemon of an older release refuses the new record (it names both
// versions) rather than misread it.
//
// What changed:
//   - the health gate's "held" is saved as "kept";
//   - CordonInherited is new. Version 1 kept every cordon of this daemon
//     that the cordon step had not recorded, as it now keeps only an
//     inherited one; such a record is read as inherited, so that a node
//     whose cordon an update replaced after its write stays cordoned as
//     before.
func migrateV1(r *Record, data []byte) error {
	var v1 struct {
		Health *struct {
			Held bool `json:"held"`
		} `json:"health"`
	}
	if err := json.Unmarshal(data, &v1); err != nil {
		return fmt.Errorf("decoding progress record of version 1: %w", err)
	}
	if r.Health != nil && v1.Health != nil {
		r.Health.Kept = v1.Health.Held
	}
	r.CordonInherited = r.CordonedByUs && !r.Done(StepCordon) && r.Replaced == nil
	r.Version = Version
	return nil
}
