package api

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/sessiongateway/gateway/internal/safefile"
	"github.com/sessiongateway/gateway/message"
)

// attachments resolves the "files" of a send. The grant must hold the
// files scope, and each path must name a regular file inside the files
// directory (Config.FilesDir), reached without "..", and without a symlink
// below that directory: a token reads what the user put there, never the
// state directory's api-token or anything else the gateway can read. The
// paths handed on are spelled through the directory's resolved path, so the
// leg that reads them follows no link the check did not see.
func (s *Server) attachments(r *http.Request, paths []string) ([]message.Attachment, *Error) {
	if len(paths) == 0 {
		return nil, nil
	}
	if g, ok := GrantFrom(r.Context()); !ok || !g.Scopes.Has(ScopeFiles) {
		return nil, &Error{Error: fmt.Sprintf("this token lacks the %q scope needed to attach files (gateway tokens add --scope send,%s)", ScopeFiles, ScopeFiles),
			Code: CodeForbidden, MissingScope: ScopeFiles.String()}
	}
	dir := s.cfg.FilesDir
	if dir == "" {
		return nil, &Error{Error: "attaching files is off: serve with --files-dir DIR", Code: CodeForbidden}
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, &Error{Error: fmt.Sprintf("the files directory %s: %v", dir, err), Code: CodeForbidden}
	}
	out := make([]message.Attachment, 0, len(paths))
	for _, p := range paths {
		rel, e := underDir(p, dir, resolved)
		if e != nil {
			return nil, e
		}
		f, err := safefile.OpenUnder(resolved, rel)
		if err != nil {
			return nil, fileError(p, dir, err)
		}
		f.Close()
		out = append(out, message.Attachment{Path: filepath.Join(resolved, rel)})
	}
	return out, nil
}

// underDir is p relative to the files directory, spelled as configured
// or as its resolved path; p must be absolute and clean.
func underDir(p, dir, resolved string) (string, *Error) {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return "", &Error{Error: fmt.Sprintf("file %q: give a clean absolute path (no .., no trailing /)", p), Code: CodeBadRequest}
	}
	for _, d := range []string{filepath.Clean(dir), resolved} {
		if rel, ok := strings.CutPrefix(p, strings.TrimSuffix(d, "/")+"/"); ok && rel != "" {
			return rel, nil
		}
	}
	return "", &Error{Error: fmt.Sprintf("file %q is outside the files directory %s (serve --files-dir)", p, dir), Code: CodeForbidden}
}

func fileError(p, dir string, err error) *Error {
	switch {
	case errors.Is(err, safefile.ErrSymlink), errors.Is(err, safefile.ErrOutside):
		return &Error{Error: fmt.Sprintf("file %q: a symlink in the files directory %s is not followed", p, dir), Code: CodeForbidden}
	case errors.Is(err, fs.ErrNotExist):
		return &Error{Error: fmt.Sprintf("file %q does not exist", p), Code: CodeBadRequest}
	case errors.Is(err, safefile.ErrNotRegular), errors.Is(err, safefile.ErrNotDir):
		return &Error{Error: fmt.Sprintf("file %q is not a regular file", p), Code: CodeBadRequest}
	case errors.Is(err, fs.ErrPermission):
		return &Error{Error: fmt.Sprintf("file %q: %v", p, err), Code: CodeForbidden}
	}
	return &Error{Error: fmt.Sprintf("file %q: %v", p, err), Code: CodeBadRequest}
}
