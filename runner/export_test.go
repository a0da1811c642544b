package runner

// SetFreeSpace replaces the free-space probe for a test; the returned
// function restores it.
func SetFreeSpace(f func(dir string) (int64, error)) (restore func()) {
	old := freeSpace
	freeSpace = f
	return func() { freeSpace = old }
}
