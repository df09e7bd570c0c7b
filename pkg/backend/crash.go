package backend

// crashHook, when set, is called at every step boundary of a mutating
// operation with the step's name ("create:synced", "delete:removed" ...).
// Only this package's crash test sets it, in a child process, to exit there
// and so prove that a crash at each boundary leaves a recoverable pool.
// Production code never sets it; it must be set before the pool is used.
var crashHook func(step string)

func crashPoint(step string) {
	if crashHook != nil {
		crashHook(step)
	}
}
