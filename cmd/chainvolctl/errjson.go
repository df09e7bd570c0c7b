package main

import (
	"encoding/json"
	"io"
	"strings"
)

// jsonError is the -o json form of a failure, one object on stderr, so
// that a script reads the outcome without parsing prose.
type jsonError struct {
	// Error is the message without the hint.
	Error string `json:"error"`
	// Hint says what to do, "" when there is no advice.
	Hint string `json:"hint,omitempty"`
	// ExitCode is the process's exit code (see the root command's help).
	ExitCode int `json:"exitCode"`
	// Reason names the exit code: failure, usage, notFound, wrongKey.
	Reason string `json:"reason"`
}

var exitReasons = map[int]string{exitFailure: "failure", exitUsage: "usage", exitNotFound: "notFound", exitWrongKey: "wrongKey"}

// writeJSONError writes err as a jsonError line to w. The hint that
// explain appends ("\nhint: ...") becomes its own field.
func writeJSONError(w io.Writer, err error, code int) {
	msg, hint, _ := strings.Cut(err.Error(), "\nhint: ")
	_ = json.NewEncoder(w).Encode(jsonError{Error: msg, Hint: hint, ExitCode: code, Reason: exitReasons[code]})
}
