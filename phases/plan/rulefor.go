package plan

// RuleFor returns the rule that decides a change of the file at path (the
// longest matching prefix, as PostAction chooses it); ok is false when no
// rule matches and the change needs a reboot.
func (p Policy) RuleFor(path string) (r Rule, ok bool) { return p.match(path) }
