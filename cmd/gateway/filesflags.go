package main

import (
	"flag"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/internal/settings"
	"github.com/sessiongateway/gateway/leg/claude"
)

// filesOpts are serve's flags for files: the one directory sends may
// attach from, and what inbound attachments may keep on disk.
type filesOpts struct {
	dir          string // --files-dir: "" for <state-dir>/files, "none" for no attachments
	uploadsQuota string // --uploads-quota, a size like 1GiB
	quota        int64  // uploadsQuota parsed by check
	maxAge       time.Duration
}

// filesDirOff is --files-dir's value that refuses every attachment.
const filesDirOff = "none"

func filesFlags(fs *flag.FlagSet, _ *env) *filesOpts {
	o := &filesOpts{}
	fs.StringVar(&o.dir, "files-dir", "", "the only directory a send may attach files from (gateway send --file, \"files\" on the API), no symlink below it followed; default <state-dir>/files, none to refuse every attachment (env GATEWAY_FILES_DIR)")
	fs.StringVar(&o.uploadsQuota, "uploads-quota", "1GiB", "most bytes inbound attachments keep in <state-dir>/uploads (one copy per distinct content); past it an attachment is refused, its message still delivered (env GATEWAY_UPLOADS_QUOTA)")
	fs.DurationVar(&o.maxAge, "uploads-max-age", claude.DefaultUploadsMaxAge, "how long an upload no message has named since is kept (env GATEWAY_UPLOADS_MAX_AGE)")
	return o
}

// check parses and validates the flags.
func (o *filesOpts) check() error {
	q, err := settings.ParseSize(o.uploadsQuota)
	if err != nil || q <= 0 {
		return fmt.Errorf("--uploads-quota %q: want a positive size like 512MiB or 2GiB", o.uploadsQuota)
	}
	o.quota = q
	if o.maxAge <= 0 {
		return fmt.Errorf("--uploads-max-age %v: want a positive duration", o.maxAge)
	}
	if o.dir != "" && o.dir != filesDirOff && !filepath.IsAbs(o.dir) {
		return fmt.Errorf("--files-dir %q: want an absolute path or %s", o.dir, filesDirOff)
	}
	return nil
}

// filesDir is the directory attachments may come from; "" for none.
func (o *filesOpts) filesDir(stateDir string) string {
	switch {
	case o == nil || o.dir == "":
		return filepath.Join(stateDir, "files")
	case o.dir == filesDirOff:
		return ""
	}
	return filepath.Clean(o.dir)
}

// prepare returns the files directory for the API, making the default
// one (0700, under the state directory) when it is missing; a directory
// given by --files-dir is the user's to make.
func (o *filesOpts) prepare(stateDir string) (string, error) {
	dir := o.filesDir(stateDir)
	if o == nil || o.dir == "" {
		if err := safefile.EnsureDir(dir); err != nil {
			return "", fmt.Errorf("files directory: %w", err)
		}
	}
	return dir, nil
}

// uploadsQuotaBytes and uploadsMaxAge are the leg's limits; zero (nil
// options) takes its defaults.
func (o *filesOpts) uploadsQuotaBytes() int64 {
	if o == nil {
		return 0
	}
	return o.quota
}

func (o *filesOpts) uploadsMaxAge() time.Duration {
	if o == nil {
		return 0
	}
	return o.maxAge
}
