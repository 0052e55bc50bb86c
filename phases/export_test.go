package phases

// UnitHealthy is judgeUnit's verdict on one unit, for the table test.
func UnitHealthy(name string, st UnitHealth, optional bool) bool {
	return judgeUnit(name, st, optional).healthy
}

// RemovesUnit is whether a diff removes an owed action's unit (owed.go).
var RemovesUnit = removesUnit

// BootSince is whether the boot read as id and start (Units.BootID) is a
// later one than the boot a record kept as thenID and thenStart (boot.go).
func BootSince(id, start, thenID, thenStart string) (bool, error) {
	return boot{id, start}.since(thenID, thenStart)
}
