package sessionsapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sessiongateway/gateway/auth"
	"github.com/sessiongateway/gateway/leg/remote/sessionsapi"
)

// A server whose pages never end (here: 100 of them, each with new ids)
// cannot make one list hold more than the caps.
func TestAListPastItsItemOrByteCapFails(t *testing.T) {
	tests := []struct {
		name    string
		perPage int
		pad     int // bytes of padding in each session
	}{
		{"too many sessions", 250, 0},   // 25,000 in all
		{"too many bytes", 1, 64 << 10}, // 6.4 MiB in all, past a cap lowered to 1 MiB
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer sessionsapi.SetMaxListBytes(1 << 20)()
			var pages atomic.Int32
			pad := strings.Repeat("x", tt.pad)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := int(pages.Add(1))
				var b strings.Builder
				b.WriteString(`{"data":[`)
				for i := range tt.perPage {
					if i > 0 {
						b.WriteByte(',')
					}
					fmt.Fprintf(&b, `{"id":"s%d-%d","title":"%s"}`, n, i, pad)
				}
				fmt.Fprintf(&b, `],"has_more":%v,"last_id":"s%d-%d"}`, n < 100, n, tt.perPage-1)
				w.Write([]byte(b.String()))
			}))
			defer srv.Close()
			c, _ := sessionsapi.New(sessionsapi.Options{BaseURL: srv.URL, Token: auth.StaticToken(testToken)})
			list, err := c.ListSessions(context.Background())
			wantErr(t, err, sessionsapi.ErrBadResponse)
			if list != nil || pages.Load() >= 100 || tt.pad > 0 && pages.Load() > 17 {
				t.Fatalf("read %d pages, kept %d sessions", pages.Load(), len(list))
			}
		})
	}
}
