package claude

import (
	"sync"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/message"
)

func TestAWorkerWritesEachTargetsMessagesInOrderAndTargetsSideBySide(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	var order []string
	wrote := make(chan string, 8)
	q := &targetQueues{queues: map[string][]message.Message{}, send: func(m message.Message) {
		if m.ID == "a1" {
			<-release // the first write to a is slow
		}
		mu.Lock()
		order = append(order, m.ID)
		mu.Unlock()
		wrote <- m.ID
	}}
	q.add(message.Message{ID: "a1", To: "a"})
	q.add(message.Message{ID: "a2", To: "a"})
	q.add(message.Message{ID: "b1", To: "b"})
	select {
	case id := <-wrote:
		if id != "b1" {
			t.Fatalf("%s written while a1 was still being written", id)
		}
	case <-time.After(testutil.Patience):
		t.Fatal("b waited behind a's slow write")
	}
	close(release)
	for range 2 {
		<-wrote
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"b1", "a1", "a2"}; len(order) != 3 || order[1] != want[1] || order[2] != want[2] {
		t.Fatalf("written %v, want %v", order, want)
	}
}
