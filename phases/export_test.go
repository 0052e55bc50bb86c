package phases

// NewStop lets the external tests build a Stop as the Runner does.
var NewStop = newStop

// RunSubList lets the external tests run a sub-list as a step does.
var RunSubList = runSubList
