package outbox

// FailWrites makes the store's writes fail with what f returns (nil lets
// a write through): a disk gone full or bad, for tests.
func FailWrites(s *Store, f func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}
