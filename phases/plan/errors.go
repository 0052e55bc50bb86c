package plan

import (
	"fmt"
	"strings"
)

// ConfigError reports a MachineConfig that is malformed or that the daemon
// cannot apply at all (for example a file fetched from an http URL). The
// caller tells it apart from other errors with errors.As.
type ConfigError struct {
	// Object is the MachineConfig's name.
	Object string
	// Field is the path of the offending field, e.g.
	// "spec.config.storage.files[2].mode"; empty when no field is to blame.
	Field string
	Msg   string
	// More counts further problems found in the same config.
	More int
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "MachineConfig %q: ", e.Object)
	if e.Field != "" {
		b.WriteString(e.Field + ": ")
	}
	b.WriteString(e.Msg)
	if e.More > 0 {
		fmt.Fprintf(&b, " (and %s)", Plural(e.More, "more error"))
	}
	return b.String()
}

// UnreconcilableError reports a desired config that cannot be applied in
// place over the current one.
type UnreconcilableError struct {
	// Object is the desired MachineConfig's name.
	Object string
	// Fields lists every offending field path, sorted.
	Fields []string
}

func (e *UnreconcilableError) Error() string {
	changed := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		changed[i] = f + " changed"
	}
	return fmt.Sprintf("MachineConfig %q cannot be applied in place: %s", e.Object, strings.Join(changed, ", "))
}
