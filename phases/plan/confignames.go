package plan

import (
	"fmt"
	"regexp"
	"strings"
)

// DefaultConfigPattern is the desired config names a node accepts unless
// the administrator widens the rule: a rendered config of its own pool,
// rendered-<pool>-<hash>, where the hash part (32 hex digits from the MCO's
// controller and phases/render.Name) is lowercase letters and digits, no
// dash: so another pool whose name extends this one's (worker-rt on a
// worker) never matches. {pool} stands for the node's pool.
const DefaultConfigPattern = "^rendered-{pool}-[0-9a-z]+$"

// poolPlaceholder is replaced by the node's pool (quoted) in a pattern.
const poolPlaceholder = "{pool}"

// ConfigPattern is a checked --allowed-config-pattern: a regular
// expression in which {pool} stands for the node's pool. The zero value
// accepts every name.
type ConfigPattern struct{ raw string }

// ParseConfigPattern checks a pattern; empty accepts every name.
func ParseConfigPattern(raw string) (ConfigPattern, error) {
	if raw == "" {
		return ConfigPattern{}, nil
	}
	if _, err := compilePattern(raw, "worker"); err != nil {
		return ConfigPattern{}, fmt.Errorf("config name pattern %q: %w", raw, err)
	}
	return ConfigPattern{raw: raw}, nil
}

// String returns the pattern as given.
func (p ConfigPattern) String() string { return p.raw }

// For returns the rule of a node in pool.
func (p ConfigPattern) For(pool string) ConfigRule {
	if p.raw == "" {
		return ConfigRule{}
	}
	re, err := compilePattern(p.raw, pool)
	return ConfigRule{pool: pool, re: re, err: err}
}

func compilePattern(raw, pool string) (*regexp.Regexp, error) {
	return regexp.Compile(strings.ReplaceAll(raw, poolPlaceholder, regexp.QuoteMeta(pool)))
}

// ConfigRule says which desired config names one node accepts, so that a
// wrong desiredConfig annotation (a fragment such as 99-worker-ssh, or
// another pool's rendered config) cannot make it apply that config. The
// zero value accepts every name.
type ConfigRule struct {
	pool string
	re   *regexp.Regexp
	err  error // the pattern did not compile for this pool
}

// Check refuses a desired config name the rule does not accept, with a
// *ConfigError naming the config.
func (r ConfigRule) Check(name string) error {
	if r.re == nil && r.err == nil {
		return nil
	}
	if r.err != nil {
		return &ConfigError{Object: name, Field: "metadata.name",
			Msg: fmt.Sprintf("cannot check the name: the allowed config pattern does not compile for pool %q: %v", r.pool, r.err)}
	}
	if r.re.MatchString(name) {
		return nil
	}
	return &ConfigError{Object: name, Field: "metadata.name", Msg: fmt.Sprintf(
		"not a rendered config of this node's pool %q (the name must match %s); a fragment or another pool's "+
			"config is never applied: set desiredConfig to the pool's rendered config, or widen "+
			"--allowed-config-pattern", r.pool, r.re)}
}
