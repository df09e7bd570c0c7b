package s3chain

// GetMaxIntoForTest is getMaxInto, for the external tests.
var GetMaxIntoForTest = getMaxInto
