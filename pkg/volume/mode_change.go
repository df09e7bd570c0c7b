package volume

// CheckModeChange is the one rule for a new volume whose content source
// (a local snapshot or volume, a backup) was made with another access
// type (issue 28): block access serves any source, a Filesystem volume's
// bytes included (KEP-3314's consumers read a snapshot's changed ranges
// from a Block volume made from it; Kubernetes gates the volume mode
// change itself, KEP-3141's allow-volume-mode-change annotation); mount
// access of a Block source needs a filesystem on it, srcFS ("" when none is
// known), else the node would format over the source's bytes. what names
// the source ("snapshot snap-…", "backup ID"). Errors: a ClassInvalid
// refusal.
func CheckModeChange(srcAccess, access, srcFS, what string) error {
	if access == AccessMount && srcAccess == AccessBlock && srcFS == "" {
		return Refuse(ClassInvalid, "%s is a Block volume holding no filesystem chainvol knows, but the request asks for mount access; create the volume with block access", what)
	}
	return nil
}
