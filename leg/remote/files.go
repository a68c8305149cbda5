package remote

import (
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"path/filepath"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/leg/remote/wire"
	"github.com/sessiongateway/gateway/message"
)

// What one message may carry in file_attachments. No server limit is
// known; these keep a post (base64 is a third larger) inside what a
// REST body reasonably takes.
const (
	MaxFiles     = 16
	MaxFileBytes = 5 << 20 // all of one message's files together
)

// ErrAttachment wraps every reason a message's files cannot be sent; the
// message then fails for good (IsRefusal), never goes without them.
var ErrAttachment = errors.New("remote leg: attachment")

// CarriesFiles: a message's attachments go as the user event's
// file_attachments.
func (l *Leg) CarriesFiles() {}

// fileAttachments reads each attachment (no symlink followed, at most the
// cap) and encodes it as a file_attachments entry
// (docs/protocols/claude-ai-remote.md#posting-events): its name, its
// media type and its bytes in standard base64.
func fileAttachments(atts []message.Attachment) ([]wire.FileAttachment, error) {
	if len(atts) > MaxFiles {
		return nil, fmt.Errorf("%w: %d files, at most %d per message", ErrAttachment, len(atts), MaxFiles)
	}
	var out []wire.FileAttachment
	total := 0
	for _, a := range atts {
		if a.Refused != "" || a.Path == "" {
			return nil, fmt.Errorf("%w: %q did not arrive (%s)", ErrAttachment, a.FileName, a.Refused)
		}
		data, err := safefile.ReadCapped(a.Path, int64(MaxFileBytes-total))
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v (at most %d MiB in all)", ErrAttachment, filepath.Base(a.Path), err, MaxFileBytes>>20)
		}
		total += len(data)
		name := a.FileName
		if name == "" {
			name = filepath.Base(a.Path)
		}
		typ := a.MediaType
		if typ == "" {
			typ = mime.TypeByExtension(filepath.Ext(name))
		}
		if typ == "" {
			typ = http.DetectContentType(data)
		}
		out = append(out, wire.FileAttachment{FileName: name, FileType: typ, FileContent: base64.StdEncoding.EncodeToString(data)})
	}
	return out, nil
}
