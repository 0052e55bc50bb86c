package phases

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// Provenance checks, before anything is touched, that a desired rendered
// config is the merge of its pool's MachineConfigs (render.Verify): the
// controller writes rendered configs, so a node that applied whatever
// config it is handed would make the controller's token root on every
// node. The daemon's adapter reads the pool and its MachineConfigs from
// the API server; nil checks nothing (a config from files, --once-from).
type Provenance interface {
	// Verify returns nil when mc is the merge of the pool's
	// MachineConfigs, else a *plan.ConfigError naming mc and the field
	// that differs, or the error reading them (wrapped with what was
	// read).
	Verify(ctx context.Context, mc *mcfgv1.MachineConfig) error
}

// RanFileName is the state file that lists, by name and digest of the
// spec, the last configs the node ran (written with the applied copy). A
// config handed back to the node later, whose fragments have since
// changed (the controller's SLO rollback hands a node the config it ran
// before), is trusted when its spec is the one the node ran then.
const RanFileName = "configs-run.json"

// ranKept bounds RanFileName: a few past configs, enough for the
// rollbacks the controller makes (one config back).
const ranKept = 8

// ranConfig is one entry of RanFileName.
type ranConfig struct {
	Name string `json:"name"`
	// Digest is the SHA-256 of the spec's JSON as the node applied it.
	Digest string `json:"digest"`
}

// verifyDesired checks the update's desired config's provenance: a config
// the node ran before, unchanged, needs no check; any other must be the
// merge of its pool's MachineConfigs.
func verifyDesired(ctx context.Context, d Data, mc *mcfgv1.MachineConfig) error {
	p := d.Ports().Provenance
	if p == nil {
		return nil
	}
	if mc.Name == d.Update().CurrentName || ranBefore(d.Ports().Host, mc) {
		return nil // the node runs it, or ran it before
	}
	return p.Verify(ctx, mc)
}

// ranBefore reports whether the node ran mc, spec unchanged. A list that
// cannot be read trusts nothing: the config is then checked in full.
func ranBefore(host Host, mc *mcfgv1.MachineConfig) bool {
	ran, err := loadRan(host)
	if err != nil {
		return false
	}
	digest, err := specDigest(mc)
	return err == nil && slices.Contains(ran, ranConfig{Name: mc.Name, Digest: digest})
}

// recordRan adds mc to RanFileName, the newest last, keeping ranKept.
func recordRan(host Host, mc *mcfgv1.MachineConfig) error {
	ran, err := loadRan(host)
	if err != nil {
		ran = nil // a broken list is replaced: it only ever widens trust
	}
	digest, err := specDigest(mc)
	if err != nil {
		return err
	}
	entry := ranConfig{Name: mc.Name, Digest: digest}
	ran = append(slices.DeleteFunc(ran, func(r ranConfig) bool { return r == entry }), entry)
	if len(ran) > ranKept {
		ran = ran[len(ran)-ranKept:]
	}
	data, err := json.Marshal(ran)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", RanFileName, err)
	}
	if err := host.WriteState(RanFileName, data); err != nil {
		return fmt.Errorf("recording that the node runs MachineConfig %q: %w", mc.Name, err)
	}
	return nil
}

// loadRan reads RanFileName; none is an empty list.
func loadRan(host Host) ([]ranConfig, error) {
	data, err := host.ReadState(RanFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading %s: %w", RanFileName, err)
	}
	var ran []ranConfig
	if err := json.Unmarshal(data, &ran); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", RanFileName, err)
	}
	return ran, nil
}

// specDigest is the SHA-256 of mc's spec as JSON: the same object read
// twice gives the same digest, any change to what a node applies another.
func specDigest(mc *mcfgv1.MachineConfig) (string, error) {
	data, err := json.Marshal(mc.Spec)
	if err != nil {
		return "", fmt.Errorf("hashing MachineConfig %q: %w", mc.Name, err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}
