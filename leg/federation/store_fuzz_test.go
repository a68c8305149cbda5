package federation

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sessiongateway/gateway/message"
)

// FuzzStoreRecords reads whatever the store's file may hold (a record a
// newer gateway wrote, a torn or edited one): never a panic, and what
// reads back is what the spool and the settled store rely on.
func FuzzStoreRecords(f *testing.F) {
	good, _ := json.Marshal(spoolEntry{V: storeVersion, Host: "b", ID: "m-1", Data: []byte(`{"v":1}`), At: time.Unix(0, 0)})
	rec, _ := json.Marshal(settledRecord{V: storeVersion, Receipt: message.Receipt{MsgID: "m-1", Status: message.StatusDelivered}})
	for _, seed := range [][]byte{good, rec, []byte(`{"v":2,"host":"b","id":"x","data":"eA=="}`),
		[]byte(`{"v":1,"host":"B/","id":"x","data":"eA=="}`), []byte(`{"v":1,"receipt":{"status":"nonsense"}}`), []byte("null"), nil} {
		f.Add(seqKey(7), seed)
		f.Add([]byte("short"), seed)
	}
	f.Fuzz(func(t *testing.T, k, v []byte) {
		if sp, ok := decodeSpooled(k, v); ok {
			if len(k) != 8 || sp.seq != seqOf(k) || !ValidHost(sp.host) || !validID(sp.id) || sp.size <= 0 {
				t.Fatalf("spool entry read as %+v from %q", sp, v)
			}
		}
		if rc, ok := decodeSettled(v); ok && rc.Status == 0 {
			t.Fatalf("settled record without a status from %q", v)
		}
	})
}
