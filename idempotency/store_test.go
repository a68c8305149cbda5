package idempotency_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/sessiongateway/gateway/idempotency"
	"github.com/sessiongateway/gateway/leg/outbox"
	"github.com/sessiongateway/gateway/message"
)

// stateDir is a private directory, as the gateway's state dir is.
func stateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

func open(t *testing.T, path string) *outbox.Store {
	t.Helper()
	st, err := outbox.Open(path, outbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestAGatewayUpgradedInPlaceFindsTheKeysItWrote(t *testing.T) {
	// The file as the gateway wrote it when the outbox stored the keys
	// itself: its bucket, its JSON, spelled out here so a renamed bucket
	// or field fails this test.
	path := filepath.Join(stateDir(t), outbox.FileName)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	const stored = `{"key":"tok-1 retry-me","digest":"d1","msg_id":"m-1","created":"2026-12-01T10:00:00Z",` +
		`"to":"bridge:session_01","to_name":"cloud","protocol":"remote","status":"queued"}`
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("idempotency-keys"))
		if err != nil {
			return err
		}
		if err := b.Put([]byte("tok-1 retry-me"), []byte(stored)); err != nil {
			return err
		}
		// One a bad write left: forgotten, not an error.
		return b.Put([]byte("tok-1 torn"), []byte(`{"key":`))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	st := open(t, path)
	defer st.Close()
	keys, err := idempotency.NewStore(st).Keys()
	if err != nil {
		t.Fatal(err)
	}
	want := idempotency.Key{Key: "tok-1 retry-me", Digest: "d1", MsgID: "m-1", Created: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		To: "bridge:session_01", ToName: "cloud", Protocol: message.ProtocolRemote, Status: message.StatusQueued}
	if len(keys) != 1 || keys[0] != want {
		t.Fatalf("read %+v, want only %+v", keys, want)
	}
}

func TestKeysSurviveARestartAndDropsAreOneWrite(t *testing.T) {
	path := filepath.Join(stateDir(t), outbox.FileName)
	st := open(t, path)
	ks := idempotency.NewStore(st)
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, k := range []string{"g a", "g b", "g c"} {
		if err := ks.PutKey(idempotency.Key{Key: k, Digest: "d", MsgID: "m-" + k, Created: at}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// One write stores a key and drops others.
	if err := ks.PutKey(idempotency.Key{Key: "g d", Digest: "d", MsgID: "m-d", Created: at, Status: message.StatusSent}, []string{"g a"}); err != nil {
		t.Fatal(err)
	}
	if err := ks.DeleteKey("g b"); err != nil {
		t.Fatal(err)
	}
	st.Close()

	st = open(t, path)
	defer st.Close()
	keys, err := idempotency.NewStore(st).Keys()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range keys {
		got = append(got, k.Key+"="+k.MsgID+"/"+k.Status.String())
	}
	if strings.Join(got, ",") != "g c=m-g c/"+message.Status(0).String()+",g d=m-d/sent" {
		t.Fatalf("after a restart the file holds %v", got)
	}
	if pending, finished := st.Len(); pending != 0 || finished != 0 {
		t.Fatalf("keys counted as outbox entries: %d pending, %d finished", pending, finished)
	}
}

func TestAKeyTheFileCannotTakeIsRefused(t *testing.T) {
	st := open(t, filepath.Join(stateDir(t), outbox.FileName))
	ks := idempotency.NewStore(st)
	if err := ks.PutKey(idempotency.Key{Key: strings.Repeat("k", 513)}, nil); err == nil {
		t.Fatal("a key of 513 bytes was stored")
	}
	if err := ks.PutKey(idempotency.Key{}, nil); err == nil {
		t.Fatal("an empty key was stored")
	}
	if err := st.Err(); err != nil {
		t.Fatalf("a refused key made the file unwritable: %v", err)
	}
	st.Close()
	if err := ks.PutKey(idempotency.Key{Key: "g a"}, nil); err == nil {
		t.Fatal("a key was stored in a closed file")
	}
	if err := st.Err(); err == nil || !errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		t.Fatalf("a failed key write is not the file's failure: Err() = %v", err)
	}
}
