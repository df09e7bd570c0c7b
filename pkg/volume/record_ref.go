package volume

import "github.com/chainvol/chainvol/pkg/backupid"

// The references a Record keeps are typed: Decode parses each label once,
// with the one parser (pkg/backupid), and keeps the label's text beside
// the result. The text is what Encode writes back, byte for byte, so the
// labels on disk are those of the drivers that kept strings; a label that
// does not parse (written by hand or by a driver with other rules) still
// counts as set and is kept unchanged, and its parse error comes out where
// the reference is used, as it did when the parse happened there.

// labelRef is a parsed reference with the label text it was read from.
// It holds no error value, so records stay comparable with ==; an
// unparsed text's error is rebuilt by the parser when asked for.
type labelRef struct {
	ref  backupid.Ref
	text string
	ok   bool // text parsed into ref
}

// readLabel parses text with parse; text that does not parse is kept as
// it is, with no reference.
func readLabel(text string, parse func(string) (backupid.Ref, error)) labelRef {
	r, err := parse(text)
	if err != nil {
		return labelRef{text: text}
	}
	return labelRef{r, text, true}
}

// get returns the parsed reference, or parse's error for the text.
func (l labelRef) get(parse func(string) (backupid.Ref, error)) (backupid.Ref, error) {
	if l.ok {
		return l.ref, nil
	}
	return parse(l.text)
}

// String is the label text: "" for none.
func (l labelRef) String() string { return l.text }

// IsZero reports whether no reference is recorded (no label).
func (l labelRef) IsZero() bool { return l.text == "" }

// RecordedRef is a backup reference "TARGET:CHAIN@ID" a Record keeps
// (RestoreRef, RestoredFrom), as backupid.ParseRef reads it.
type RecordedRef struct{ labelRef }

// RefOf is the recorded form of r, a reference the parser returned.
func RefOf(r backupid.Ref) RecordedRef { return ReadRef(r.String()) }

// ReadRef reads a label's text; text that does not parse is kept as it is.
func ReadRef(text string) RecordedRef { return RecordedRef{readLabel(text, backupid.ParseRef)} }

// Ref returns the reference. Errors: backupid.ParseRef's (wrapping
// backupid.ErrBadRef) when the label is absent or does not parse.
func (l RecordedRef) Ref() (backupid.Ref, error) { return l.get(backupid.ParseRef) }

// RecordedID is a backup snapshot id "backup:TARGET:CHAIN@ID" a Record
// keeps (BackupRef), as backupid.Parse reads it: a hashed chain stays
// "~HEX" (match it with SameChain, resolve it with ResolveChain).
type RecordedID struct{ labelRef }

// IDOf is the recorded snapshot id of the backup r names (backupid.Format).
func IDOf(r backupid.Ref) RecordedID { return ReadID(backupid.Format(r)) }

// ReadID reads a label's text; text that does not parse is kept as it is.
func ReadID(text string) RecordedID { return RecordedID{readLabel(text, backupid.Parse)} }

// Ref returns the reference the id names. Errors: backupid.Parse's
// (wrapping backupid.ErrBadRef) when the label is absent or does not parse.
func (l RecordedID) Ref() (backupid.Ref, error) { return l.get(backupid.Parse) }
