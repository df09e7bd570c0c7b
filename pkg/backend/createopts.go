package backend

import "fmt"

// validateCreate checks what can be checked of o without the store.
func validateCreate(o CreateOptions) error {
	if idPrefix(o.Kind) == "" {
		return fmt.Errorf("kind %q: %w", o.Kind, ErrInvalid)
	}
	if o.Name == "" || len(o.Name) > maxNameBytes {
		return fmt.Errorf("name of %d bytes (want 1..%d): %w", len(o.Name), maxNameBytes, ErrInvalid)
	}
	if o.SourceID != "" && !ValidID(o.SourceID) {
		return fmt.Errorf("malformed source id %q: %w", o.SourceID, ErrNotFound)
	}
	if o.SizeBytes < 0 || (o.SizeBytes == 0 && o.SourceID == "") {
		return fmt.Errorf("size %d bytes: %w", o.SizeBytes, ErrInvalid)
	}
	return nil
}

// createSize is the size in bytes of a new lvol: o.SizeBytes rounded up to
// 4096, or for a clone with SizeBytes 0 the source's size. A clone may not be
// smaller than its source (CSI spec, "CreateVolume": a volume from a source
// is at least as large as the source). Errors: ErrInvalid.
func createSize(o CreateOptions, src record) (int64, error) {
	if src.ID != "" && o.SizeBytes == 0 {
		return src.SizeBytes, nil
	}
	size, err := roundSize(o.SizeBytes)
	if err != nil {
		return 0, err
	}
	if src.ID != "" && size < src.SizeBytes {
		return 0, fmt.Errorf("size %d bytes below source's %d: %w", size, src.SizeBytes, ErrInvalid)
	}
	return size, nil
}

// sameOrExists answers an idempotent Create: old if o asks for the same
// lvol (same SourceID, and same rounded size unless o leaves it 0 for a
// clone), else ErrExists.
func sameOrExists(old record, o CreateOptions) (LVol, error) {
	if old.SourceID != o.SourceID {
		return LVol{}, fmt.Errorf("%s %q has source %q, not %q: %w", o.Kind, o.Name, old.SourceID, o.SourceID, ErrExists)
	}
	if o.SizeBytes == 0 && o.SourceID != "" {
		return old.LVol, nil
	}
	size, err := roundSize(o.SizeBytes)
	if err != nil {
		return LVol{}, err
	}
	if size != old.SizeBytes {
		return LVol{}, fmt.Errorf("%s %q has %d bytes, not %d: %w", o.Kind, o.Name, old.SizeBytes, size, ErrExists)
	}
	return old.LVol, nil
}

// mergeLabels returns a copy of base with add merged in; an empty value in
// add deletes the key. It returns nil rather than an empty map.
func mergeLabels(base, add map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(add))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range add {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
