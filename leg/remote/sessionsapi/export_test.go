package sessionsapi

// SetMaxListBytes lowers the byte cap of a list for a test; restore puts
// it back.
func SetMaxListBytes(n int) (restore func()) {
	old := maxListBytes
	maxListBytes = n
	return func() { maxListBytes = old }
}
