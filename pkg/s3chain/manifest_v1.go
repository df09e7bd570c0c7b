package s3chain

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Version 1 manifests (read, and rewritten as version 2 before a delete
// needs it) are the Manifest struct's own JSON: FORMAT.md §4.4.

func encodeV1(m *Manifest) []byte {
	c := *m
	if c.Blocks == nil {
		c.Blocks = []BlockRef{}
	}
	b, err := json.Marshal(&c)
	if err != nil { // only plain types: cannot happen
		panic(err)
	}
	return b
}

func decodeV1(data []byte) (*Manifest, error) {
	m := &Manifest{}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := m.validateV1(); err != nil {
		return nil, err
	}
	if !bytes.Equal(encodeV1(m), data) {
		return nil, fmt.Errorf("%w: backup %q is not canonically encoded", ErrInvalidManifest, m.ID)
	}
	return m, nil
}
