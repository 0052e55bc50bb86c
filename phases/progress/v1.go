package progress

import (
	"encoding/json"
	"fmt"
	"time"
)

// Version 1 of the record, as the release before this one writes it: what
// the steps produced in flags of the record itself. It is read once, as a
// daemon of this release starts on a node mid-update, and migrated
// (migrateV1); the record is written back as version 2 at its next save.
// testdata/v1 holds records of that release; TestRecordsOfVersion1Resume
// holds the migration to them. Do not change these types.
type recordV1 struct {
	Version             int         `json:"version"`
	Current             string      `json:"current"`
	Desired             string      `json:"desired"`
	Steps               []Step      `json:"steps,omitempty"`
	CordonedByUs        bool        `json:"cordonedByUs,omitempty"`
	CordonOwn           bool        `json:"cordonOwn,omitempty"`
	WriteStarted        bool        `json:"writeStarted,omitempty"`
	WriteBootID         string      `json:"writeBootID,omitempty"`
	WriteBootStart      string      `json:"writeBootStart,omitempty"`
	CreatedDirs         []string    `json:"createdDirs,omitempty"`
	RebootFromBootID    string      `json:"rebootFromBootID,omitempty"`
	RebootFromBootStart string      `json:"rebootFromBootStart,omitempty"`
	RebootRequestedAt   time.Time   `json:"rebootRequestedAt,omitzero"`
	OS                  *OSPlan     `json:"os,omitempty"`
	Action              *ActionPlan `json:"action,omitempty"`
	EarlierKernelArgs   []string    `json:"earlierKernelArgs,omitempty"`
	Health              *healthV1   `json:"health,omitempty"`
	RebootRequest       string      `json:"rebootRequest,omitempty"`
	Replaced            *Replaced   `json:"replaced,omitempty"`
	Owed                *Owed       `json:"owed,omitempty"`
}

type healthV1 struct {
	Retry               string    `json:"retry,omitempty"`
	StartedAt           time.Time `json:"startedAt,omitzero"`
	Failed              string    `json:"failed,omitempty"`
	Steps               []Step    `json:"steps,omitempty"`
	RebootFromBootID    string    `json:"rebootFromBootID,omitempty"`
	RebootFromBootStart string    `json:"rebootFromBootStart,omitempty"`
	RebootRequestedAt   time.Time `json:"rebootRequestedAt,omitzero"`
	Held                bool      `json:"held,omitempty"`
}

// migrateV1 reads a record of version 1 as version 2: each flag moves to
// the step that produced it, meaning what it meant.
func migrateV1(data []byte) (*Record, error) {
	var o recordV1
	if err := json.Unmarshal(data, &o); err != nil {
		return nil, fmt.Errorf("decoding progress record of version 1: %w", err)
	}
	r := &Record{
		Version: Version, Current: o.Current, Desired: o.Desired, RebootRequest: o.RebootRequest, Steps: o.Steps,
		Inherited: Inherited{Replaced: o.Replaced, Owed: o.Owed, EarlierKernelArgs: o.EarlierKernelArgs},
		Prepare:   Prepared{OS: o.OS, Action: o.Action},
		Cordon:    Cordon{ByUs: o.CordonedByUs, Own: o.CordonOwn},
		Write: Written{Started: o.WriteStarted, BootID: o.WriteBootID, BootStart: o.WriteBootStart,
			CreatedDirs: o.CreatedDirs},
		Reboot: Rebooted{FromBootID: o.RebootFromBootID, FromBootStart: o.RebootFromBootStart,
			RequestedAt: o.RebootRequestedAt},
	}
	if h := o.Health; h != nil {
		r.Health = &Health{Retry: h.Retry, StartedAt: h.StartedAt, Failed: h.Failed, Steps: h.Steps, Kept: h.Held,
			Reboot: Rebooted{FromBootID: h.RebootFromBootID, FromBootStart: h.RebootFromBootStart,
				RequestedAt: h.RebootRequestedAt}}
	}
	return r, nil
}
