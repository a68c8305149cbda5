package hosted

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sessiongateway/gateway/leg/remote/wire"
)

// writeTimeout is how long a CLI may leave a line of ours unread (a
// variable for the tests of a CLI that stops reading).
var writeTimeout = 10 * time.Second

// Bounds of one CLI process.
const (
	maxLine        = 8 << 20 // one stdout line: a big tool result fits, a runaway line does not
	stderrKept     = 8 << 10 // the last of stderr, for the report of a CLI that died
	stopGrace      = 3 * time.Second
	maxJunkInARow  = 64 // lines that do not decode before the CLI is given up on
	outputQueueLen = 256
	inputQueueLen  = DefaultMaxQueued + 16 // the turns waiting, and answers and controls beside them
)

// proc is one running CLI: its stdin, the lines it writes, its end.
type proc struct {
	cmd   *exec.Cmd
	stdin *os.File
	wmu   sync.Mutex // one line at a time on stdin

	lines chan wire.Message // what it writes, decoded, in order
	// queue holds the lines for its stdin, in order; one goroutine writes
	// them, so a CLI that stops reading holds up no caller (it is stopped).
	queue  chan []byte
	stuck  atomic.Bool // it left a line unread for writeTimeout and was stopped
	junk   int         // lines that did not decode
	inARow int         // of them since the last good line
	stderr *tailBuffer
	done   chan struct{} // closed when the process has exited and its output is read
	err    error         // how it ended, once done is closed
}

// startProc runs program args in dir, in a process group of its own that
// dies with the gateway (Pdeathsig), with env and nothing inherited.
func startProc(program string, args []string, dir string, env []string) (*proc, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	p := &proc{stdin: inW, lines: make(chan wire.Message, outputQueueLen), queue: make(chan []byte, inputQueueLen),
		stderr: &tailBuffer{max: stderrKept}, done: make(chan struct{})}
	cmd := exec.Command(program, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, p.stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.cmd = cmd
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("starting %s: %w", program, err)
	}
	go p.read(outR)
	go p.writeQueued()
	return p, nil
}

// errInputFull: the CLI has this many lines of ours waiting unread.
var errInputFull = errors.New("hosted: the CLI's input queue is full (it is not reading)")

// enqueue hands line to the writer, in order, never waiting: a full queue
// is refused (the caller keeps what it wanted written).
func (p *proc) enqueue(line []byte) error {
	select {
	case p.queue <- line:
		return nil
	case <-p.done:
		return errNotRunning
	default:
		return errInputFull
	}
}

// writeQueued writes the queued lines until the process ends. A line the
// CLI leaves unread for writeTimeout stops it: a half-written line would
// break its input for good, and its turns stay kept for its next start.
func (p *proc) writeQueued() {
	for {
		select {
		case line := <-p.queue:
			if err := p.write(line); err != nil {
				p.stuck.Store(true)
				p.kill()
				return
			}
		case <-p.done:
			return
		}
	}
}

// read decodes stdout until it ends, then reaps the process.
func (p *proc) read(out *os.File) {
	defer close(p.done)
	defer close(p.lines)
	r := wire.NewNDJSONReader(out, maxLine)
	for {
		m, err := r.Next()
		if err != nil {
			// A line that does not decode is skipped and counted; the
			// stream goes on. Many in a row is a CLI gone wrong.
			var le *wire.LineError
			if errors.As(err, &le) {
				p.junk++
				if p.inARow++; p.inARow <= maxJunkInARow {
					continue
				}
				p.kill()
			}
			break
		}
		p.inARow = 0
		p.lines <- m
	}
	out.Close()
	p.err = p.cmd.Wait()
}

// write puts one line on the CLI's stdin. A CLI that does not read within
// writeTimeout is not taking input: the write fails, nothing blocks.
func (p *proc) write(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	if err := p.stdin.SetWriteDeadline(time.Now().Add(writeTimeout)); err != nil {
		return err
	}
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	_, err := p.stdin.Write(line)
	return err
}

// stop ends the CLI: stdin closed (its own clean end), then SIGTERM to its
// group, then SIGKILL, each after a grace.
func (p *proc) stop(ctx context.Context) {
	p.wmu.Lock()
	p.stdin.Close()
	p.wmu.Unlock()
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			_ = syscall.Kill(-p.cmd.Process.Pid, sig)
		}
		t := time.NewTimer(stopGrace)
		select {
		case <-p.done:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			p.kill()
			<-p.done
			return
		case <-t.C:
		}
	}
	<-p.done
}

func (p *proc) kill() { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
