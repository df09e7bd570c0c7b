package store

// CreateTempForTest is createTemp: the temporary file a write of path
// goes through, for tests that leave it behind as a killed writer would.
var CreateTempForTest = createTemp
