// Package osfake is a fake of rpm-ostree and bootc for the test bed's nodes,
// which cannot run the real tools: one small static program that answers as
// `rpm-ostree` and as `bootc` (by the name it is called as) with the real
// tools' subcommands, flags, exit codes, --json field names and error
// messages, for what the daemon uses. Deployments live in a JSON state file
// in the node. A staged deployment becomes the booted one only through a
// reboot of the node: a unit inside the node finalizes it at boot (real
// ostree does so at shutdown). Switch files make pulls fail and make the
// next boot fall back to the old deployment.
package osfake

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Paths inside the node.
const (
	Dir = "/var/lib/nodeconfd-osfake"
	// StateFile holds the deployments.
	StateFile = Dir + "/state.json"
	// InvocationsFile logs every call: one JSON array of the arguments
	// (the tool's name first) per line.
	InvocationsFile = Dir + "/invocations.log"
	// BootsFile logs every boot: the booted deployment's image, one a line.
	BootsFile = Dir + "/boots.log"
	// FailPullsFile holds how many of the next pulls fail.
	FailPullsFile = Dir + "/fail-pulls"
	// FallbackFile, when present, makes the next boot that finalizes a
	// staged deployment boot the previous one instead (and is removed).
	FallbackFile = Dir + "/fallback-next-boot"
	// Binary is the fake program; the tools are links to it.
	Binary = "/usr/libexec/nodeconfd-osfake"
)

// Deployment is one ostree deployment.
type Deployment struct {
	Checksum  string   `json:"checksum"`
	Serial    int      `json:"serial"`
	Image     string   `json:"image"`
	Version   string   `json:"version"`
	Timestamp int64    `json:"timestamp"`
	Kargs     []string `json:"kargs"`
	Staged    bool     `json:"staged"`
	// Packages are the layered packages and Removals the base packages
	// removed, as the deployment's origin requests them.
	Packages []string `json:"packages,omitempty"`
	Removals []string `json:"removals,omitempty"`
}

// State is the node's deployments in ostree's order (the staged or pending
// one first, then the booted one, then the rollback) and which is booted.
type State struct {
	OSName      string       `json:"osname"`
	Deployments []Deployment `json:"deployments"`
	Booted      int          `json:"booted"`
}

// fake is one run of the program against a root folder.
type fake struct {
	root   string
	state  State
	stdout io.Writer
	stderr io.Writer
}

func (f *fake) path(p string) string { return filepath.Join(f.root, p) }

func (f *fake) load() error {
	data, err := os.ReadFile(f.path(StateFile))
	if err != nil {
		return fmt.Errorf("reading the fake's state: %w", err)
	}
	return json.Unmarshal(data, &f.state)
}

func (f *fake) save() error {
	return writeJSON(f.path(StateFile), f.state)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func (f *fake) logInvocation(args []string) {
	line, _ := json.Marshal(args)
	if err := os.MkdirAll(f.path(Dir), 0o755); err != nil {
		return
	}
	fh, err := os.OpenFile(f.path(InvocationsFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return
	}
	defer fh.Close()
	_, _ = fh.Write(append(line, '\n'))
}

// pullFails consumes one failure from FailPullsFile.
func (f *fake) pullFails() bool {
	p := f.path(FailPullsFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	if n <= 0 {
		return false
	}
	_ = os.WriteFile(p, []byte(strconv.Itoa(n-1)+"\n"), 0o644)
	return true
}

// id is the deployment's ostree ID.
func (f *fake) id(d Deployment) string {
	return fmt.Sprintf("%s-%s.%d", f.state.OSName, d.Checksum, d.Serial)
}

// newDeployment makes a deployment of image with kargs and the origin
// (layered packages, base removals) of from, as rpm-ostree carries them
// over; its checksum is the image's and the origin's, its serial counted
// among the deployments of the same commit.
func (f *fake) newDeployment(from Deployment, image string, kargs []string) Deployment {
	sum := sha256.Sum256([]byte(image + "\x00" + strings.Join(from.Packages, ",") + "\x00" + strings.Join(from.Removals, ",")))
	if len(from.Packages)+len(from.Removals) == 0 {
		sum = sha256.Sum256([]byte(image))
	}
	d := Deployment{Checksum: hex.EncodeToString(sum[:]), Image: image, Kargs: append([]string{}, kargs...),
		Version: "fake." + hex.EncodeToString(sum[:3]), Timestamp: 1735689600, Staged: true,
		Packages: slices.Clone(from.Packages), Removals: slices.Clone(from.Removals)}
	for _, o := range f.state.Deployments {
		if o.Checksum == d.Checksum && o.Serial >= d.Serial {
			d.Serial = o.Serial + 1
		}
	}
	return d
}

// stage makes d the staged deployment, replacing a staged one.
func (f *fake) stage(d Deployment) {
	if len(f.state.Deployments) > 0 && f.state.Deployments[0].Staged {
		f.state.Deployments = f.state.Deployments[1:]
		f.state.Booted--
	}
	f.state.Deployments = append([]Deployment{d}, f.state.Deployments...)
	f.state.Booted++
}

// digest is the image's manifest digest: the one it names, or a made-up one.
func digest(image string) string {
	if _, d, ok := strings.Cut(image, "@"); ok {
		return d
	}
	sum := sha256.Sum256([]byte("manifest " + image))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// registryHost is the registry an image name is pulled from.
func registryHost(name string) string {
	host, _, _ := strings.Cut(name, "/")
	return host
}
