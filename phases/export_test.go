package phases

// NewStop lets the external tests build a Stop as the Runner does.
var NewStop = newStop

// RunSubList lets the external tests run a sub-list as a step does.
var RunSubList = runSubList

// UnitHealthy is judgeUnit's verdict on one unit, for the table test.
func UnitHealthy(name string, st UnitHealth, optional bool) bool {
	return judgeUnit(name, st, optional).healthy
}

// RemovesUnit is whether a diff removes an owed action's unit (owed.go).
var RemovesUnit = removesUnit

// Booted is whether two boot IDs prove a boot between them (owed.go).
var Booted = booted
