package driver

import "github.com/chainvol/chainvol/pkg/volume"

// What the driver records on lvols is a volume.Record; its codec is the
// only code that reads or writes lvol labels. The access types name the
// same two values in capabilities and records.
const (
	accessBlock = volume.AccessBlock
	accessMount = volume.AccessMount
)
