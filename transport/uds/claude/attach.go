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
func (p *Peer) stage(src []message.Attachment) ([]message.Attachment, error) {
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

func (p *Peer) stageOne(path string) (message.Attachment, error) {
	f, err := os.Open(path)
	if err != nil {
		return message.Attachment{}, fmt.Errorf("%w: %v", ErrAttachment, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return message.Attachment{}, fmt.Errorf("%w: %v", ErrAttachment, err)
	}
	if !fi.Mode().IsRegular() {
		return message.Attachment{}, fmt.Errorf("%w: %s is not a regular file", ErrAttachment, path)
	}
	if fi.Size() > MaxFileSize {
		return message.Attachment{}, fmt.Errorf("%w: %s is %d bytes, at most %d", ErrAttachment, path, fi.Size(), MaxFileSize)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return message.Attachment{}, fmt.Errorf("%w: %v", ErrAttachment, err)
	}
	if len(data) > MaxFileSize {
		return message.Attachment{}, fmt.Errorf("%w: %s grew past %d bytes", ErrAttachment, path, MaxFileSize)
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
// (absolute path in the spool, regular file, size, sha256) and, when an
// uploads directory is set, copies it there. Refused ones are left out and
// logged.
func (p *Peer) acceptAttachments(msgID string, in []message.Attachment) []message.Attachment {
	var out []message.Attachment
	for i, a := range in {
		if i >= MaxFilesPerMessage {
			p.log.Info("attachments past the cap ignored", "msg_id", msgID, "count", len(in))
			break
		}
		data, err := p.checkDescriptor(a)
		if err != nil {
			p.log.Info("inbound attachment refused", "msg_id", msgID, "file", a.FileName, "err", err)
			continue
		}
		if p.cfg.UploadsDir != "" {
			dir := filepath.Join(p.cfg.UploadsDir, safeFileName(msgID))
			if err := safefile.EnsureDir(dir); err == nil {
				dst := filepath.Join(dir, safeFileName(a.FileName))
				if err := safefile.WriteAtomic(dst, data); err == nil {
					a.Path = dst
				}
			}
		}
		out = append(out, a)
	}
	return out
}

func (p *Peer) checkDescriptor(a message.Attachment) ([]byte, error) {
	if !filepath.IsAbs(a.Path) || filepath.Clean(a.Path) != a.Path {
		return nil, errors.New("path is not absolute and clean")
	}
	if filepath.Dir(a.Path) != filepath.Clean(p.cfg.SpoolDir) {
		return nil, errors.New("path is outside the spool")
	}
	if a.FileSize < 0 || a.FileSize > MaxFileSize {
		return nil, errors.New("size out of range")
	}
	data, err := safefile.ReadCapped(a.Path, MaxFileSize)
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != a.FileSize {
		return nil, fmt.Errorf("size %d, descriptor says %d", len(data), a.FileSize)
	}
	sum := sha256.Sum256(data)
	if !strings.EqualFold(hex.EncodeToString(sum[:]), a.SHA256) {
		return nil, errors.New("sha256 does not match")
	}
	return data, nil
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
