package uds

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sessiongateway/gateway/internal/clock"
	"github.com/sessiongateway/gateway/internal/safefile"
)

// Limits caps what one peer can cost us. Zero fields take the defaults.
type Limits struct {
	MaxLine          int           // default 1 MiB: a longer line closes the conn (ErrLineTooLong)
	FirstLineTimeout time.Duration // default 30 s from accept to complete the first line
	LineTimeout      time.Duration // default 30 s to complete each later line
	// MaxConns is the most connections served at once (default 64). While
	// that many are open the listener accepts nothing: a dial waits in the
	// kernel's backlog until a slot frees, and is refused once the backlog
	// is full, so a write to a full listener is never taken and dropped.
	MaxConns int
	// MaxConnsPerPeer is the most connections one process (uid and pid, as
	// SO_PEERCRED reports them) is served at once (default 8), so that one
	// process cannot take every slot. As many more wait, unread and holding
	// no slot, and are served as the process's own connections end; one
	// more than that is closed unread at once and counted: its sender sees
	// the close (a reset when it had written), never a silent success.
	MaxConnsPerPeer int
	// MaxConnAge is how long a connection may stay open at all (default
	// 2 min), whatever it sends: lines that keep re-arming the read
	// deadline cannot hold a slot for ever. A genuine peer writes one
	// message per connection and is done in milliseconds.
	MaxConnAge time.Duration
	// Units is what MaxLine counts: bytes (Claude Code) or, for Qwen Code,
	// UTF-16 code units of the line read as UTF-8.
	Units LineUnits
	// Rearm is what restarts the read deadline: every completed line
	// (Claude Code), or only a line the handler accepted (Qwen Code: junk
	// lines do not extend the deadline).
	Rearm Rearm
}

// LineUnits is what Limits.MaxLine counts.
type LineUnits uint8

const (
	UnitBytes LineUnits = iota // bytes, the default
	// UnitUTF16 counts UTF-16 code units, as a JavaScript string's length:
	// one per character, two for one outside the Basic Multilingual Plane.
	// A byte that cannot start a UTF-8 sequence counts nothing, so bytes
	// are capped too, at 3×MaxLine, which valid text within MaxLine never
	// reaches.
	UnitUTF16
)

// Rearm is what restarts a connection's read deadline.
type Rearm uint8

const (
	// RearmEachLine: the first line must complete within FirstLineTimeout
	// of the accept, each later one within LineTimeout of the last.
	RearmEachLine Rearm = iota
	// RearmOnMark: the deadline is FirstLineTimeout after the accept, and
	// moves to LineTimeout from now only when the handler calls Conn.Mark
	// for a line it accepted, so a peer sending junk lines is cut off as
	// one sending nothing would be.
	RearmOnMark
)

// Defaults for Limits.
const (
	DefaultMaxLine          = 1 << 20
	DefaultFirstLineTimeout = 30 * time.Second
	DefaultLineTimeout      = 30 * time.Second
	DefaultMaxConns         = 64
	DefaultMaxConnsPerPeer  = 8
	DefaultMaxConnAge       = 2 * time.Minute
)

func (l Limits) withDefaults() Limits {
	if l.MaxLine <= 0 {
		l.MaxLine = DefaultMaxLine
	}
	if l.FirstLineTimeout <= 0 {
		l.FirstLineTimeout = DefaultFirstLineTimeout
	}
	if l.LineTimeout <= 0 {
		l.LineTimeout = DefaultLineTimeout
	}
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.MaxConnsPerPeer <= 0 {
		l.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	}
	l.MaxConnsPerPeer = min(l.MaxConnsPerPeer, l.MaxConns)
	if l.MaxConnAge <= 0 {
		l.MaxConnAge = DefaultMaxConnAge
	}
	return l
}

// Stats is a snapshot of a listener's counters.
type Stats struct {
	Accepted    uint64 // connections handed to a handler
	Rejected    uint64 // closed at once: over MaxConnsPerPeer, or peer credentials unreadable
	PeerLimited uint64 // of Rejected, those over MaxConnsPerPeer with as many waiting
	Waited      uint64 // connections that waited for one of their peer's slots
	LineTooLong uint64 // connections closed for a line over MaxLine
	Timeouts    uint64 // connections closed for a line not completed in time, or at MaxConnAge
}

type counters struct {
	accepted, rejected, peerLimited, waited, tooLong, timeouts atomic.Uint64
}

// Handler serves one connection. Serve closes the connection when it returns.
// ctx is cancelled at shutdown, when pending and later I/O on c also fails.
type Handler func(ctx context.Context, c *Conn)

// Listener is a Unix stream socket bound to a path in a private directory.
type Listener struct {
	path  string
	lim   Limits
	ln    *net.UnixListener
	inode os.FileInfo // the socket file we bound, so we never remove a successor's
	stats counters

	served    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// Listen binds a socket at path, whose parent directory must pass safefile.CheckDir.
// A socket file already there is replaced only when it is stale (connect is
// refused); a live one is ErrInUse. A symlink or non-socket at path is refused.
// The socket is made 0600.
func Listen(path string, lim Limits) (*Listener, error) {
	if err := checkSocketPath(path); err != nil {
		return nil, err
	}
	dfd, err := safefile.OpenDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("uds: listen %s: directory: %w", path, err)
	}
	_ = unix.Close(dfd)
	if err := clearStale(path); err != nil {
		return nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// Someone bound it between our check and our bind.
			return nil, &opError{op: "listen", path: path, kind: ErrInUse, cause: err}
		}
		return nil, fmt.Errorf("uds: listen %s: %w", path, err)
	}
	// We remove the file ourselves, and only if it is still ours.
	ln.SetUnlinkOnClose(false)
	l := &Listener{path: path, lim: lim.withDefaults(), ln: ln}
	fi, err := os.Lstat(path)
	switch {
	case err != nil:
	case fi.Mode().Type() != fs.ModeSocket:
		err = safefile.ErrChanged // replaced already: not ours to chmod or remove
	default:
		l.inode = fi
		// The window between bind and chmod is covered by the 0700 directory.
		err = os.Chmod(path, 0o600)
	}
	if err != nil {
		_ = l.Close()
		return nil, fmt.Errorf("uds: listen %s: %w", path, err)
	}
	return l, nil
}

// clearStale removes a socket file at path that nobody listens on.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("uds: listen %s: %w", path, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("uds: listen %s: %w", path, safefile.ErrSymlink)
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("uds: listen %s: %w", path, ErrNotSocket)
	}
	err = Probe(context.Background(), path)
	switch {
	case errors.Is(err, ErrRefused):
		if err := safefile.RemoveIfSame(path, fi); err != nil {
			return fmt.Errorf("uds: listen %s: removing stale socket: %w", path, err)
		}
		return nil
	case errors.Is(err, ErrNoSocket):
		return nil // gone since our Lstat
	case err == nil:
		return &opError{op: "listen", path: path, kind: ErrInUse, cause: syscall.EADDRINUSE}
	default:
		// Busy, timed out or unreadable: not provably stale, so never removed.
		return &opError{op: "listen", path: path, kind: ErrInUse, cause: err}
	}
}

// Path is the socket path.
func (l *Listener) Path() string { return l.path }

// Stats returns the counters so far.
func (l *Listener) Stats() Stats {
	return Stats{
		Accepted:    l.stats.accepted.Load(),
		Rejected:    l.stats.rejected.Load(),
		PeerLimited: l.stats.peerLimited.Load(),
		Waited:      l.stats.waited.Load(),
		LineTooLong: l.stats.tooLong.Load(),
		Timeouts:    l.stats.timeouts.Load(),
	}
}

// Close closes the socket and removes its file if it is still the one we
// bound. Serve calls it on exit; call it directly only for a Listener that is
// never served. It is safe to call more than once.
func (l *Listener) Close() error {
	l.closeOnce.Do(func() {
		// Remove first: while our descriptor is open the socket's inode
		// cannot be reused, so the comparison cannot mistake a successor
		// for us.
		var err error
		if l.inode != nil {
			if rerr := safefile.RemoveIfSame(l.path, l.inode); rerr != nil && !errors.Is(rerr, safefile.ErrChanged) {
				err = rerr
			}
		}
		if cerr := l.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
		l.closeErr = err
	})
	return l.closeErr
}

// Accept and Addr make a Listener a net.Listener, for servers that bring
// their own framing (the HTTP control API): they get the same checked,
// 0600, stale-socket-aware binding and removal on Close, without the line
// caps of Serve.
func (l *Listener) Accept() (net.Conn, error) { return l.ln.Accept() }

var _ net.Listener = (*Listener)(nil)

// Addr is the socket's address.
func (l *Listener) Addr() net.Addr { return l.ln.Addr() }

// Serve accepts connections and runs h for each in its own goroutine until ctx
// is done. It then closes the socket, removes its file, cancels the handlers'
// ctx, interrupts their I/O and waits for all of them before returning. It
// returns nil after a shutdown by ctx or Close, else the accept error.
func (l *Listener) Serve(ctx context.Context, h Handler) error {
	if !l.served.CompareAndSwap(false, true) {
		return errors.New("uds: Serve called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Wake Accept with a deadline rather than Close: Close below removes
	// the file while the socket is still open, so its inode cannot be
	// reused by a successor in between.
	stop := onDone(ctx, func() { _ = l.ln.SetDeadline(longAgo) })

	var wg sync.WaitGroup
	table := newSlotTable(l.lim)
	slots := make(chan struct{}, l.lim.MaxConns) // a full channel is the cap
	err := l.acceptLoop(ctx, slots, func(uc *net.UnixConn) {
		cred, err := PeerCred(uc)
		if err != nil {
			l.stats.rejected.Add(1)
			_ = uc.Close()
			<-slots
			return
		}
		switch table.admit(uc, cred) {
		case admitServe:
			wg.Go(func() {
				l.serveInTurn(ctx, table, uc, cred, h)
				<-slots
			})
		case admitWait:
			l.stats.waited.Add(1)
			<-slots // a waiting connection holds no slot
		default:
			// Counted before the close, so a peer that sees the close
			// also sees the count.
			l.stats.peerLimited.Add(1)
			l.stats.rejected.Add(1)
			_ = uc.Close()
			<-slots
		}
	})

	stop()
	cancel()
	closeErr := l.Close()
	table.shutdown()
	wg.Wait()
	return errors.Join(err, closeErr)
}

// serveInTurn runs h for uc and then, in the same slot, for each
// connection of the same peer that waited for one.
func (l *Listener) serveInTurn(ctx context.Context, table *slotTable, uc *net.UnixConn, cred Cred, h Handler) {
	for {
		c := newConn(ctx, uc, cred, l.lim, &l.stats)
		if table.start(c) {
			l.stats.accepted.Add(1)
			h(ctx, c)
		}
		_ = uc.Close()
		next, ok := table.finish(c, cred)
		if !ok {
			return
		}
		uc, cred = next.uc, next.cred
	}
}

// acceptLoop takes a slot, then accepts a connection and calls serve with
// it, which owns the slot from then on, until ctx is done or the listener is
// closed (nil) or accept fails for good (the error). With every slot taken
// it does not accept: the kernel queues dials in the listen backlog and
// refuses them once that is full.
func (l *Listener) acceptLoop(ctx context.Context, slots chan struct{}, serve func(*net.UnixConn)) error {
	// Out of descriptors or memory: wait for handlers to finish rather
	// than spin, as net/http does, from 5 ms doubling to 1 s, and from
	// 5 ms again once an accept works.
	wait := acceptBackoff.New(clock.Real{})
	for {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		uc, err := l.ln.AcceptUnix()
		if err == nil {
			wait.Reset()
			serve(uc)
			continue
		}
		<-slots
		if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
			return nil
		}
		if !retryableAccept(err) {
			return fmt.Errorf("uds: accept on %s: %w", l.path, err)
		}
		if clock.Sleep(ctx, clock.Real{}, wait.NextBackOff()) != nil {
			return nil
		}
	}
}

var acceptBackoff = clock.Backoff{Initial: 5 * time.Millisecond, Max: time.Second}

func retryableAccept(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED, syscall.EINTR} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// onDone runs f once ctx is done. The returned stop guarantees, when it
// returns, that f has either finished or will never run, so no goroutine
// outlives its owner.
func onDone(ctx context.Context, f func()) (stop func()) {
	finished := make(chan struct{})
	stopFunc := context.AfterFunc(ctx, func() {
		defer close(finished)
		f()
	})
	return func() {
		if !stopFunc() {
			<-finished
		}
	}
}
