package volume

import (
	"errors"
	"fmt"
)

// refusal is an error of a request rule (rules.go, the restore story): its
// class and the whole message a user acts on. Classify reads the class
// before any sentinel the message wraps.
type refusal struct {
	class Class
	err   error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

// Refuse returns an error of class c whose message is format filled with
// args (fmt.Errorf: %w wraps).
func Refuse(c Class, format string, args ...any) error {
	return &refusal{class: c, err: fmt.Errorf(format, args...)}
}

// refusalClass returns the class of the outermost refusal err holds.
func refusalClass(err error) (Class, bool) {
	var r *refusal
	if errors.As(err, &r) {
		return r.class, true
	}
	return ClassNone, false
}
