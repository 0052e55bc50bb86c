package osfake

import (
	"fmt"
	"strings"
)

// flags is parsed GOption-style options: --name=value, --name value, -x.
// Like GOption and clap, both tools stop at "--" (what follows is
// positional, even when it starts with -) and take -h or --help before it
// as a request for help: they print it and exit 0 without doing anything.
type flags struct {
	values     map[string][]string
	positional []string
	help       bool
}

func (f flags) has(name string) bool { return len(f.values[name]) > 0 }
func (f flags) last(name string) string {
	v := f.values[name]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// parseFlags parses args: bools are flags without a value, valued take one;
// short maps one-letter options to long names.
func parseFlags(args []string, bools, valued []string, short map[string]string) (flags, error) {
	f := flags{values: map[string][]string{}}
	isBool := map[string]bool{}
	for _, b := range bools {
		isBool[b] = true
	}
	isValued := map[string]bool{}
	for _, v := range valued {
		isValued[v] = true
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			f.positional = append(f.positional, args[i+1:]...)
			return f, nil
		case a == "--help" || a == "-h":
			f.help = true
		case strings.HasPrefix(a, "--"):
			name, value, hasValue := strings.Cut(a[2:], "=")
			switch {
			case isBool[name] && !hasValue:
				f.values[name] = append(f.values[name], "true")
			case isValued[name] && hasValue:
				f.values[name] = append(f.values[name], value)
			case isValued[name] && i+1 < len(args):
				i++
				f.values[name] = append(f.values[name], args[i])
			case isValued[name]:
				return f, fmt.Errorf("Missing argument for --%s", name)
			default:
				return f, fmt.Errorf("Unknown option %s", a)
			}
		case len(a) > 1 && a[0] == '-':
			for _, c := range a[1:] {
				name, ok := short[string(c)]
				if !ok || !isBool[name] {
					return f, fmt.Errorf("Unknown option -%c", c)
				}
				f.values[name] = append(f.values[name], "true")
			}
		default:
			f.positional = append(f.positional, a)
		}
	}
	return f, nil
}
