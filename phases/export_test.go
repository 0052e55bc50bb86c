package phases

// NewStop lets the external tests build a Stop as the Runner does.
var NewStop = newStop
