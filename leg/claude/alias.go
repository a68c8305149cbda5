package claude

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/sessiongateway/gateway/internal/inorder"
	"github.com/sessiongateway/gateway/message"
)

// On the Claude side a name needs its own process
// (docs/protocols/claude-peer-socket.md#alias-workers): the registry is one file per pid, with one name. An alias is a
// worker process of the gateway itself, registered under the alias name,
// talking to the gateway over an inherited socket pair: the gateway asks it
// to send, it reports what arrives. A worker dies with its parent (its end
// of the pair closes, and PR_SET_PDEATHSIG), and the pool retires workers
// that have been idle for a while.

// Alias is a running worker as the pool sees it.
type Alias struct {
	Name      string
	Address   string
	SessionID string
	PID       int
}

// PoolConfig sets up an AliasPool.
type PoolConfig struct {
	// Command builds the worker's command (the gateway binary with its
	// alias-worker subcommand and the registration flags) for an alias name.
	Command func(name string) *exec.Cmd
	// Events receives what arrives at every alias, stamped with its name.
	Events func(alias string, ev message.Event)
	// IdleAfter retires a worker no message went through for this long;
	// default 10 minutes.
	IdleAfter time.Duration
	// StartTimeout bounds a worker's start; default 15 s.
	StartTimeout time.Duration
	// MaxWorkers caps the workers running at once, published or not;
	// default DefaultMaxWorkers. A new alias beyond it is refused with a
	// *LimitError.
	MaxWorkers int
	Logger     *slog.Logger
}

// DefaultMaxWorkers is the default cap on alias workers. Each is a process
// of about 17 MB resident, so the default bounds them near 550 MB however
// many sessions the other legs list (anyone who can write a registry file
// can list one).
const DefaultMaxWorkers = 32

// ErrAliasLimit is why a new alias is refused: the pool runs MaxWorkers.
var ErrAliasLimit = errors.New("alias limit reached")

// LimitError is a refused alias. It is ErrAliasLimit, and a drop with
// reason alias-limit to the router.
type LimitError struct {
	Name string
	Max  int
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("alias %q refused: %v (%d alias workers running)", e.Name, ErrAliasLimit, e.Max)
}

// Is makes a LimitError match ErrAliasLimit.
func (e *LimitError) Is(target error) bool { return target == ErrAliasLimit }

// DropReason is the reason a message needing the alias was turned away.
func (e *LimitError) DropReason() message.DropReason { return message.DropAliasLimit }

// AliasPool starts alias workers lazily, one per name, and retires them.
type AliasPool struct {
	cfg PoolConfig
	log *slog.Logger

	mu      sync.Mutex
	workers map[string]*worker
	closed  bool
	wg      sync.WaitGroup
}

// setReady ends the wait for the worker's start, once, with err.
func (w *worker) setReady(err error) {
	w.once.Do(func() {
		w.startEr = err
		close(w.ready)
	})
}

type worker struct {
	alias     Alias
	cmd       *exec.Cmd
	ctl       *os.File
	wmu       sync.Mutex
	ready     chan struct{}
	exited    chan struct{} // closed once the process is reaped
	once      sync.Once
	startEr   error
	lastUse   time.Time
	published bool // named by the last Retire: stands for a live session
	sent      map[string]chan error
	smu       sync.Mutex
}

// NewAliasPool returns an empty pool.
func NewAliasPool(cfg PoolConfig) *AliasPool {
	if cfg.IdleAfter == 0 {
		cfg.IdleAfter = 10 * time.Minute
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 15 * time.Second
	}
	if cfg.MaxWorkers <= 0 {
		cfg.MaxWorkers = DefaultMaxWorkers
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &AliasPool{cfg: cfg, log: cfg.Logger.With("component", "alias-pool"), workers: map[string]*worker{}}
}

// ErrPoolClosed is returned after Close.
var ErrPoolClosed = errors.New("alias pool closed")

// Get returns the alias for name, starting its worker when there is none:
// an alias on demand, retired once idle (see Retire).
func (p *AliasPool) Get(ctx context.Context, name string) (Alias, error) {
	w, err := p.worker(name, false)
	if err != nil {
		return Alias{}, err
	}
	return p.wait(ctx, name, w)
}

// worker returns the worker for name, starting one (without waiting for it)
// when there is none and the cap allows. A published worker stands for a
// listed session and stops when it is no longer listed.
func (p *AliasPool) worker(name string, publish bool) (*worker, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	w, ok := p.workers[name]
	if ok {
		w.published = w.published || publish
		p.mu.Unlock()
		return w, nil
	}
	if len(p.workers) >= p.cfg.MaxWorkers {
		p.mu.Unlock()
		return nil, &LimitError{Name: name, Max: p.cfg.MaxWorkers}
	}
	w = &worker{ready: make(chan struct{}), exited: make(chan struct{}), sent: map[string]chan error{},
		published: publish, lastUse: time.Now()}
	p.workers[name] = w
	p.mu.Unlock()
	p.start(name, w)
	return w, nil
}

// wait waits for w, the worker of name, to be ready, and forgets it when
// it failed to start.
func (p *AliasPool) wait(ctx context.Context, name string, w *worker) (Alias, error) {
	select {
	case <-w.ready:
	case <-ctx.Done():
		return Alias{}, ctx.Err()
	}
	if w.startEr != nil {
		p.mu.Lock()
		if p.workers[name] == w {
			delete(p.workers, name)
		}
		p.mu.Unlock()
		return Alias{}, w.startEr
	}
	p.mu.Lock()
	w.lastUse = time.Now()
	p.mu.Unlock()
	return w.alias, nil
}

// Publish makes the aliases named in keep the published ones: each is
// started (up to the cap) or kept, and published aliases no longer named
// stop, as Retire says. It waits for the new workers to be ready and
// returns the names refused at the cap, in order, with the first other
// error.
func (p *AliasPool) Publish(ctx context.Context, keep map[string]bool) (refused []string, err error) {
	p.Retire(keep)
	names := make([]string, 0, len(keep))
	for name := range keep {
		names = append(names, name)
	}
	slices.Sort(names) // the same names win the free slots at every sync
	started := map[string]*worker{}
	for _, name := range names {
		w, werr := p.worker(name, true)
		switch {
		case errors.Is(werr, ErrAliasLimit):
			refused = append(refused, name)
		case werr != nil:
			err = cmp.Or(err, werr)
		default:
			started[name] = w
		}
	}
	for _, name := range names {
		if w := started[name]; w != nil {
			if _, werr := p.wait(ctx, name, w); werr != nil {
				err = cmp.Or(err, werr)
			}
		}
	}
	return refused, err
}

func (p *AliasPool) start(name string, w *worker) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		w.setReady(fmt.Errorf("alias %q: socketpair: %w", name, err))
		return
	}
	parent, child := os.NewFile(uintptr(fds[0]), "alias-ctl"), os.NewFile(uintptr(fds[1]), "alias-ctl-child")
	cmd := p.cfg.Command(name)
	cmd.ExtraFiles = []*os.File{child} // fd 3 in the child
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM // never outlive the gateway
	if err := cmd.Start(); err != nil {
		parent.Close()
		child.Close()
		w.setReady(fmt.Errorf("alias %q: starting worker: %w", name, err))
		return
	}
	child.Close()
	w.cmd, w.ctl = cmd, parent
	p.wg.Add(2)
	go func() { defer p.wg.Done(); p.read(name, w) }()
	go func() {
		defer p.wg.Done()
		_ = cmd.Wait()
		close(w.exited)
		p.mu.Lock()
		if p.workers[name] == w {
			delete(p.workers, name)
		}
		p.mu.Unlock()
		parent.Close()
	}()
	go func() {
		t := time.NewTimer(p.cfg.StartTimeout)
		defer t.Stop()
		select {
		case <-w.ready:
		case <-t.C:
			w.setReady(fmt.Errorf("alias %q: worker did not start within %v", name, p.cfg.StartTimeout))
			_ = cmd.Process.Kill()
		}
	}()
}

// read relays a worker's lines until its pipe closes.
func (p *AliasPool) read(name string, w *worker) {
	sc := bufio.NewScanner(w.ctl)
	sc.Buffer(make([]byte, 64<<10), maxWorkerLine)
	readied := false
	for sc.Scan() {
		var op WorkerOp
		if json.Unmarshal(sc.Bytes(), &op) != nil {
			continue
		}
		switch op.Op {
		case OpReady:
			if !readied {
				readied = true
				w.alias = Alias{Name: name, Address: op.Address, SessionID: op.SessionID, PID: op.PID}
				w.setReady(nil)
			}
		case OpEvent:
			p.mu.Lock()
			w.lastUse = time.Now()
			p.mu.Unlock()
			if op.Event != nil && p.cfg.Events != nil {
				p.cfg.Events(name, op.event())
			}
		case OpSent:
			w.smu.Lock()
			ch := w.sent[op.MsgID]
			delete(w.sent, op.MsgID)
			w.smu.Unlock()
			if ch != nil {
				if op.Error != "" {
					ch <- errors.New(op.Error)
				} else {
					ch <- nil
				}
			}
		}
	}
	if err := sc.Err(); err != nil && w.cmd != nil {
		// A worker that cannot be followed is ended, so it is reaped and
		// forgotten (the next use starts another) rather than left blocked
		// on its write, its socket taking messages nobody hears.
		p.log.Warn("alias worker unreadable: ending it", "alias", name, "err", err)
		_ = w.cmd.Process.Kill()
	}
	w.setReady(fmt.Errorf("alias %q: worker exited before it was ready", name))
	w.smu.Lock()
	for id, ch := range w.sent {
		ch <- fmt.Errorf("alias %q: worker exited", name)
		delete(w.sent, id)
	}
	w.smu.Unlock()
}

// Send sends m from the alias name (starting it if needed) and waits for
// the worker's write to finish. Once m is on the worker's pipe it tells
// ctx (inorder.Queued): the worker writes m to its target before any
// message to that target it is asked for later.
func (p *AliasPool) Send(ctx context.Context, name string, m message.Message) error {
	if _, err := p.Get(ctx, name); err != nil {
		return err
	}
	p.mu.Lock()
	w := p.workers[name]
	p.mu.Unlock()
	if w == nil {
		return fmt.Errorf("alias %q: worker gone", name)
	}
	b, err := encodeOp(WorkerOp{Op: OpSend, Message: &m})
	if err != nil {
		return fmt.Errorf("alias %q: %w", name, err)
	}
	ch := make(chan error, 1)
	w.smu.Lock()
	w.sent[m.ID] = ch
	w.smu.Unlock()
	w.wmu.Lock()
	_, err = w.ctl.Write(b)
	w.wmu.Unlock()
	if err != nil {
		return fmt.Errorf("alias %q: %w", name, err)
	}
	inorder.Queued(ctx)
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// has reports whether a worker for name runs or is starting.
func (p *AliasPool) has(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.workers[name] != nil
}

// Aliases lists the running aliases.
func (p *AliasPool) Aliases() []Alias {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Alias
	for _, w := range p.workers {
		select {
		case <-w.ready:
			if w.startEr == nil {
				out = append(out, w.alias)
			}
		default:
		}
	}
	return out
}

// Retire publishes keep: aliases named there stay up; a published alias
// no longer named (its session left) stops now; an alias started on demand
// for a sender (SendAs) and never published stops once idle longer than
// IdleAfter.
func (p *AliasPool) Retire(keep map[string]bool) {
	p.mu.Lock()
	var stop []*worker
	for name, w := range p.workers {
		switch {
		case keep[name]:
			w.published = true
		case w.published, time.Since(w.lastUse) > p.cfg.IdleAfter:
			stop = append(stop, w)
		}
	}
	p.mu.Unlock()
	for _, w := range stop {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.stop(w) }()
	}
}

func (p *AliasPool) stop(w *worker) {
	<-w.ready
	if w.ctl == nil {
		return
	}
	// Ask first, so the worker deregisters; signal only one that lingers.
	b, _ := encodeOp(WorkerOp{Op: OpStop})
	w.wmu.Lock()
	_, _ = w.ctl.Write(b)
	w.wmu.Unlock()
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-w.exited:
		return
	case <-t.C:
	}
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	t.Reset(stopGrace)
	select {
	case <-w.exited:
	case <-t.C:
		_ = w.cmd.Process.Kill()
	}
}

// stopGrace is how long a worker gets to deregister after each nudge.
const stopGrace = 3 * time.Second

// Close stops every worker and waits for them to exit (each deregisters).
func (p *AliasPool) Close() {
	p.mu.Lock()
	p.closed = true
	ws := make([]*worker, 0, len(p.workers))
	for _, w := range p.workers {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() { p.stop(w) })
	}
	wg.Wait()
	p.wg.Wait()
}
