package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/coreos/go-semver/semver"
	ignerrors "github.com/coreos/ignition/v2/config/shared/errors"
	ignutil "github.com/coreos/ignition/v2/config/util"
	ign "github.com/coreos/ignition/v2/config/v3_5"
	"github.com/coreos/ignition/v2/config/v3_5/types"
	vpath "github.com/coreos/vcontext/path"
	"github.com/coreos/vcontext/report"
	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
)

// coreUser is the only user whose password hash the daemon manages.
const coreUser = "core"

// ParseWithLimits parses and validates a rendered MachineConfig. It accepts
// every Ignition 3.x spec up to 3.5.0 (older ones are translated to 3.5); an
// empty config is an empty Config. A config that is malformed, that the
// daemon cannot apply at all, or whose decoded contents exceed lim yields a
// *ConfigError naming the first offending field.
func ParseWithLimits(mc *mcfgv1.MachineConfig, lim Limits) (Config, error) {
	if mc == nil {
		return Config{}, &ConfigError{Msg: "no MachineConfig given"}
	}
	p := &parser{name: mc.Name, size: budget{limits: lim.withDefaults()}}
	ignCfg := p.ignition(mc.Spec.Config.Raw)
	if len(p.problems) > 0 {
		return Config{}, p.err()
	}
	cfg := Config{
		Name:           mc.Name,
		Files:          map[string]File{},
		Units:          map[string]Unit{},
		OSImageURL:     mc.Spec.OSImageURL,
		Extensions:     append([]string(nil), mc.Spec.Extensions...),
		KernelType:     mc.Spec.KernelType,
		FIPS:           mc.Spec.FIPS,
		Unreconcilable: map[string]string{},
	}
	if !p.counts(ignCfg) {
		return Config{}, p.err()
	}
	p.checkIgnitionSection(ignCfg.Ignition)
	p.countInline(ignCfg)
	p.files(&cfg, ignCfg.Storage.Files)
	p.units(&cfg, ignCfg.Systemd.Units)
	p.passwd(&cfg, ignCfg.Passwd)
	p.unreconcilableSections(&cfg, ignCfg)
	p.conflicts(&cfg)
	p.osFields(mc.Spec.Extensions, mc.Spec.KernelType)
	cfg.KernelArguments = p.kernelArguments(mc.Spec.KernelArguments)
	if mc.Spec.OSImageURL != "" {
		if _, err := ParseImage(mc.Spec.OSImageURL); err != nil {
			p.add("spec.osImageURL", "%v", err)
		}
	}
	if mc.Spec.FIPS {
		cfg.Unreconcilable["spec.fips"] = "true"
	}
	if len(p.problems) > 0 {
		return Config{}, p.err()
	}
	return cfg, nil
}

// parser collects the problems found in one MachineConfig.
type parser struct {
	name     string
	problems []*ConfigError
	size     budget
	// version is the config's Ignition spec, as written (before translation).
	version semver.Version
}

func (p *parser) add(field, format string, args ...any) {
	p.problems = append(p.problems, &ConfigError{Object: p.name, Field: field, Msg: fmt.Sprintf(format, args...)})
}

// err returns the first problem, counting the others.
func (p *parser) err() error {
	first := *p.problems[0]
	first.More = len(p.problems) - 1
	first.Others = p.problems[1:]
	return &first
}

// ignition parses the raw Ignition config, translating older 3.x specs.
func (p *parser) ignition(raw []byte) types.Config {
	if len(bytes.TrimSpace(raw)) == 0 {
		return types.Config{}
	}
	cfg, rpt, err := ign.ParseCompatibleVersion(raw)
	if err == nil {
		p.version, _, _ = ignutil.GetConfigVersion(raw) // it parsed: the version is valid
	}
	for _, e := range rpt.Entries {
		if e.Kind.IsFatal() {
			p.addReportEntry(e, raw)
		}
	}
	switch {
	case err == nil || len(p.problems) > 0:
	case errors.Is(err, ignerrors.ErrUnknownVersion) || errors.Is(err, ignerrors.ErrInvalidVersion):
		var stub struct {
			Ignition struct{ Version string }
		}
		_ = json.Unmarshal(raw, &stub) // it parsed before: only the version is wrong
		p.add("spec.config.ignition.version", "%v %q (want 3.0.0 through %s)", err, stub.Ignition.Version, types.MaxVersion)
	default:
		p.add("spec.config", "%v", err)
	}
	return cfg
}

// addReportEntry turns one Ignition validation entry into a problem. An
// entry without a field (a JSON syntax or type error) gets its position.
func (p *parser) addReportEntry(e report.Entry, raw []byte) {
	msg := e.Message
	if e.Context.Len() == 0 && e.Marker.StartP != nil {
		// encoding/json's offsets point just past the offending byte.
		line, col := position(raw, e.Marker.StartP.Index-1)
		msg = fmt.Sprintf("line %d col %d: %s", line, col, msg)
	}
	p.add(reportField(e.Context), "%s", msg)
}

// position returns the 1-based line and column of the byte at offset i in raw.
func position(raw []byte, i int64) (line, col int) {
	i = min(max(i, 0), int64(len(raw)))
	before := raw[:i]
	line = bytes.Count(before, []byte("\n")) + 1
	col = len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// reportField renders an Ignition context path as a MachineConfig field path.
func reportField(c vpath.ContextPath) string {
	var b strings.Builder
	b.WriteString("spec.config")
	for _, el := range c.Path {
		if i, ok := el.(int); ok {
			fmt.Fprintf(&b, "[%d]", i)
		} else {
			fmt.Fprintf(&b, ".%v", el)
		}
	}
	return b.String()
}

// checkIgnitionSection refuses configs that still point at other configs:
// the daemon applies rendered configs only and never fetches.
func (p *parser) checkIgnitionSection(s types.Ignition) {
	if len(s.Config.Merge) > 0 {
		p.add("spec.config.ignition.config.merge", "merging other configs is not supported: the config must be fully rendered")
	}
	if s.Config.Replace.Source != nil {
		p.add("spec.config.ignition.config.replace", "replacing the config is not supported: the config must be fully rendered")
	}
}

func (p *parser) files(cfg *Config, files []types.File) {
	for i, f := range files {
		field := fmt.Sprintf("spec.config.storage.files[%d]", i)
		msg := checkPath(f.Path)
		if msg == "" {
			msg = p.checkDepth(f.Path)
		}
		if msg != "" {
			p.add(field+".path", "%s", msg)
			continue
		}
		mode := fs.FileMode(0o644)
		if f.Mode != nil {
			if *f.Mode < 0 || *f.Mode > 0o7777 {
				p.add(field+".mode", "mode %#o is outside 0..07777", *f.Mode)
				continue
			}
			mode = fileMode(p.version, *f.Mode)
		}
		if !p.checkOwnerIDs(field, f) {
			continue
		}
		contents, ok := p.fileContents(field, f)
		if !ok {
			continue
		}
		if len(f.Append) > 0 {
			// Appending is not idempotent: only a reprovision applies it.
			cfg.Unreconcilable[fmt.Sprintf("spec.config.storage.files[path=%s].append", f.Path)] = canonical(f.Append)
		}
		cfg.Files[f.Path] = File{
			Field:    field,
			Path:     f.Path,
			Contents: contents,
			Mode:     mode,
			User:     Owner{ID: copyInt(f.User.ID), Name: deref(f.User.Name)},
			Group:    Owner{ID: copyInt(f.Group.ID), Name: deref(f.Group.Name)},
		}
	}
}

func (p *parser) units(cfg *Config, units []types.Unit) {
	for i, u := range units {
		field := fmt.Sprintf("spec.config.systemd.units[%d]", i)
		if msg := checkUnitName(u.Name); msg != "" {
			p.add(field+".name", "%s", msg)
			continue
		}
		unit := Unit{Field: field, Name: u.Name, Mask: u.Mask != nil && *u.Mask}
		if u.Contents != nil && *u.Contents != "" {
			c := *u.Contents
			unit.Contents = &c
		}
		if u.Enabled != nil {
			e := *u.Enabled
			unit.Enabled = &e
		}
		for j, d := range u.Dropins {
			if msg := checkDropinName(d.Name); msg != "" {
				p.add(fmt.Sprintf("%s.dropins[%d].name", field, j), "%s", msg)
				continue
			}
			// Like Ignition, a drop-in without contents writes nothing.
			if d.Contents == nil {
				continue
			}
			if unit.Dropins == nil {
				unit.Dropins = map[string]string{}
			}
			unit.Dropins[d.Name] = *d.Contents
		}
		if sub, msg := checkUnit(unit); msg != "" {
			p.add(field+sub, "%s", msg)
			continue
		}
		cfg.Units[u.Name] = unit
	}
}
