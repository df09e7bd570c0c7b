package durable

// crashHook, when set, is called between the steps of a write or rename
// with the name of the step just done: "created", "written", "synced",
// "committed", "done". Only this package's crash test sets it, to shut
// the filesystem down there; production code never does.
var crashHook func(step string)

func crashPoint(step string) {
	if crashHook != nil {
		crashHook(step)
	}
}
