package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/render"
)

// Exit statuses of `nodeconfd render`, as plan's.
const (
	renderDone    = 0
	renderRefused = 1
	renderUsage   = 2
)

type renderOptions struct {
	pool, selector, output, osImage, extensionsImage string
	limits                                           plan.Limits
	files                                            []string
}

func parseRenderFlags(args []string, stderr io.Writer) (renderOptions, error) {
	var o renderOptions
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage:\n  nodeconfd render [--pool worker] [-o yaml|json] [flags] FILE...\n\n"+
			"Merges the MachineConfigs of a pool (YAML or JSON files; several documents, a List or a\n"+
			"MachineConfigList in a file) into the pool's rendered MachineConfig, as the controller does, and prints it.\n"+
			"Exit status: 0 rendered, 1 refused (the error names the MachineConfig and field), 2 usage error.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.pool, "pool", "worker", "the pool to render")
	fs.StringVar(&o.selector, "selector", "", "the pool's machineConfigSelector as a label selector "+
		"(default: "+render.RoleLabel+"=POOL, upstream's default pools' selector); MachineConfigs it does not select are skipped")
	fs.StringVar(&o.output, "o", "yaml", "output: yaml or json")
	fs.StringVar(&o.osImage, "base-os-image-url", "", "the OS image the pool runs when no MachineConfig sets one (default: none, the nodes keep their OS)")
	fs.StringVar(&o.extensionsImage, "base-os-extensions-image", "", "the same for the extensions image")
	limitFlags(fs, &o.limits, "the daemon's")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.files = fs.Args()
	switch {
	case len(o.files) == 0:
		return o, errors.New("give the MachineConfig files to render")
	case o.output != "yaml" && o.output != "json":
		return o, fmt.Errorf("-o %q: want yaml or json", o.output)
	case o.pool == "":
		return o, errors.New("--pool is empty")
	}
	return o, o.limits.Check()
}

// runRender is `nodeconfd render`; it returns the exit status.
func runRender(args []string, stdout, stderr io.Writer) int {
	o, err := parseRenderFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return renderUsage
	}
	if err != nil {
		fmt.Fprintln(stderr, "nodeconfd render:", err)
		return renderUsage
	}
	selector := render.PoolSelector(o.pool)
	if o.selector != "" {
		if selector, err = metav1.ParseToLabelSelector(o.selector); err != nil {
			fmt.Fprintf(stderr, "nodeconfd render: --selector: %v\n", err)
			return renderUsage
		}
	}
	var all []*mcfgv1.MachineConfig
	for _, f := range o.files {
		mcs, err := readMachineConfigs(f)
		if err != nil {
			fmt.Fprintln(stderr, "nodeconfd render:", err)
			return renderUsage
		}
		all = append(all, mcs...)
	}
	selected, err := render.Select(o.pool, selector, all)
	if err == nil {
		var res render.Result
		opts := render.Options{BaseOSImageURL: o.osImage, BaseOSExtensionsImage: o.extensionsImage, ControllerVersion: version, Limits: o.limits}
		if res, err = render.Render(o.pool, selected, opts); err == nil {
			return writeRendered(o, res, len(all)-len(selected), stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "nodeconfd render: pool %s: %v\n", o.pool, err)
	return renderRefused
}

// writeRendered prints the rendered config, and on stderr what it was
// rendered from.
func writeRendered(o renderOptions, res render.Result, skipped int, stdout, stderr io.Writer) int {
	out, err := encodeRendered(res.Config, o.output)
	if err == nil {
		_, err = stdout.Write(out)
	}
	if err != nil {
		fmt.Fprintln(stderr, "nodeconfd render: writing the rendered config:", err)
		return renderUsage
	}
	names := make([]string, len(res.Sources))
	for i, s := range res.Sources {
		names[i] = s.Name
	}
	fmt.Fprintf(stderr, "%s: pool %s, %s in merge order: %s", res.Config.Name, o.pool,
		plan.Plural(len(names), "MachineConfig"), strings.Join(names, ", "))
	if skipped > 0 {
		fmt.Fprintf(stderr, " (%s not selected)", plan.Plural(skipped, "other"))
	}
	fmt.Fprintln(stderr)
	return renderDone
}

// encodeRendered encodes the config without the fields a new object has
// empty (creationTimestamp, status), as kubectl would print it.
func encodeRendered(mc *mcfgv1.MachineConfig, output string) ([]byte, error) {
	data, err := json.Marshal(mc)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	if output == "json" {
		out, err := json.MarshalIndent(obj, "", "  ")
		return append(out, '\n'), err
	}
	return yaml.Marshal(obj)
}

// readMachineConfigs reads the MachineConfigs of a YAML or JSON file: one
// or more documents, each a MachineConfig or a list of them.
func readMachineConfigs(path string) ([]*mcfgv1.MachineConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading MachineConfig file: %w", err)
	}
	var out []*mcfgv1.MachineConfig
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		if err := d.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s (document %d): %w", path, doc, err)
		}
		if len(bytes.TrimSpace(raw)) == 0 || string(raw) == "null" {
			continue // an empty document
		}
		mcs, err := decodeMachineConfigs(raw)
		if err != nil {
			return nil, fmt.Errorf("%s (document %d): %w", path, doc, err)
		}
		out = append(out, mcs...)
	}
	return out, nil
}

// decodeMachineConfigs decodes one document: a MachineConfig, or a List
// or MachineConfigList of them.
func decodeMachineConfigs(raw []byte) ([]*mcfgv1.MachineConfig, error) {
	var head struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, err
	}
	switch head.Kind {
	case "MachineConfig", "": // plan reads a file without kind as a MachineConfig too
		var mc mcfgv1.MachineConfig
		if err := json.Unmarshal(raw, &mc); err != nil {
			return nil, err
		}
		if mc.Name == "" {
			return nil, errors.New("a MachineConfig with an empty metadata.name")
		}
		return []*mcfgv1.MachineConfig{&mc}, nil
	case "List", "MachineConfigList":
		var out []*mcfgv1.MachineConfig
		for i, item := range head.Items {
			mcs, err := decodeMachineConfigs(item)
			if err != nil {
				return nil, fmt.Errorf("items[%d]: %w", i, err)
			}
			out = append(out, mcs...)
		}
		return out, nil
	}
	return nil, fmt.Errorf("holds a %q, want MachineConfigs (kind MachineConfig, List or MachineConfigList)", head.Kind)
}
