package claude

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"mime"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/message"
)

// Attachment caps of the real CLI.
const (
	MaxFileSize        = 30 << 20
	MaxFilesPerMessage = 16
)

// ErrAttachment wraps every attachment refusal.
var ErrAttachment = errors.New("attachment")

// stage copies each source file into the spool as <sha8>-<uuid8>-<name>,
// 0600, and returns the descriptors the frame carries.
func (p *Leg) stage(src []message.Attachment) ([]message.Attachment, error) {
	if len(src) == 0 {
		return nil, nil
	}
	if len(src) > MaxFilesPerMessage {
		return nil, fmt.Errorf("%w: %d files, at most %d per message", ErrAttachment, len(src), MaxFilesPerMessage)
	}
	if err := safefile.EnsureDir(p.cfg.SpoolDir); err != nil {
		return nil, fmt.Errorf("%w: spool: %v", ErrAttachment, err)
	}
	var out []message.Attachment
	for _, a := range src {
		d, err := p.stageOne(a.Path)
		if err != nil {
			removeStaged(out)
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

func (p *Leg) stageOne(path string) (message.Attachment, error) {
	// No symlink followed, no FIFO waited on, at most the cap read.
	data, err := safefile.ReadCapped(path, MaxFileSize)
	if err != nil {
		return message.Attachment{}, fmt.Errorf("%w: %v", ErrAttachment, err)
	}
	sum := sha256.Sum256(data)
	hexsum := hex.EncodeToString(sum[:])
	name := safeFileName(filepath.Base(path))
	staged := filepath.Join(p.cfg.SpoolDir, fmt.Sprintf("%s-%s-%s", hexsum[:8], strings.ReplaceAll(uuid.NewString(), "-", "")[:8], name))
	if err := safefile.CreateExclusive(staged, data); err != nil {
		return message.Attachment{}, fmt.Errorf("%w: staging: %v", ErrAttachment, err)
	}
	return message.Attachment{Path: staged, FileName: name, FileSize: int64(len(data)), SHA256: hexsum,
		MediaType: mime.TypeByExtension(filepath.Ext(name))}, nil
}

func safeFileName(n string) string {
	n = strings.Map(func(r rune) rune {
		if r < 0x20 || r == '/' || r == '\\' || r == 0x7f {
			return '_'
		}
		return r
	}, n)
	if n == "" || n == "." || n == ".." {
		n = "file"
	}
	if len(n) > 128 {
		n = n[:128]
	}
	return n
}

// acceptAttachments checks each inbound descriptor as the real CLI does
// (absolute path in the spool, regular file, size, sha256) and, with an
// uploads directory, keeps its content there once per distinct content. A
// descriptor that is refused stays in the list with its reason and no
// path, and the message is delivered without the file. Nothing an
// unauthenticated sender names is read at all.
func (p *Leg) acceptAttachments(m message.Message) []message.Attachment {
	in := m.Attachments
	if len(in) > MaxFilesPerMessage {
		p.log.Info("attachments past the cap ignored", "msg_id", m.ID, "count", len(in))
		in = in[:MaxFilesPerMessage]
	}
	type seen struct {
		path, sum string
		size      int64
	}
	done := map[seen]message.Attachment{} // sixteen names for one file cost one read
	out := make([]message.Attachment, 0, len(in))
	for _, a := range in {
		a.Refused = ""
		key := seen{a.Path, strings.ToLower(a.SHA256), a.FileSize}
		if prev, ok := done[key]; ok {
			a.Path, a.Refused = prev.Path, prev.Refused
			out = append(out, a)
			continue
		}
		path, refusal, err := p.keepAttachment(m.Auth, a)
		if refusal != "" {
			p.log.Info("inbound attachment refused", "msg_id", m.ID, "file", a.FileName, "reason", string(refusal), "err", err)
		}
		a.Path, a.Refused = path, refusal
		done[key] = a
		out = append(out, a)
	}
	return out
}

// keepAttachment checks one descriptor and returns the path the message
// carries: in the uploads directory when there is one, else the spool
// file itself, checked.
func (p *Leg) keepAttachment(auth message.AuthClass, a message.Attachment) (string, message.AttachmentRefusal, error) {
	if auth == message.AuthUnauthenticated || auth == "" {
		return "", message.AttachmentUnauthenticated, errors.New("the sender presented no token")
	}
	if err := p.checkDescriptor(a); err != nil {
		return "", message.AttachmentInvalid, err
	}
	if p.uploads == nil {
		if err := verifySpooled(io.Discard, a); err != nil {
			return "", message.AttachmentInvalid, err
		}
		return a.Path, "", nil
	}
	return p.uploads.store(a)
}

// checkDescriptor is what can be checked without reading the file.
func (p *Leg) checkDescriptor(a message.Attachment) error {
	if !filepath.IsAbs(a.Path) || filepath.Clean(a.Path) != a.Path {
		return errors.New("path is not absolute and clean")
	}
	if filepath.Dir(a.Path) != filepath.Clean(p.cfg.SpoolDir) {
		return errors.New("path is outside the spool")
	}
	if a.FileSize < 0 || a.FileSize > MaxFileSize {
		return errors.New("size out of range")
	}
	if !validSHA256(a.SHA256) {
		return errors.New("sha256 is not 64 hex digits")
	}
	return nil
}

func validSHA256(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}

// spoolMaxAge is how long a staged file may wait in the spool, as the real
// CLI's 1-day spool GC allows.
const spoolMaxAge = 24 * time.Hour

// gcSpool removes regular files older than spoolMaxAge from the spool. Links
// and directories are left alone; errors only mean a file stays for later.
func gcSpool(dir string, now time.Time) (removed int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < spoolMaxAge {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// CarriesFiles: a message's attachments are staged in the spool and named
// in the frame (stage).
func (p *Leg) CarriesFiles() {}
