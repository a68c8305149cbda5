package standin_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/sessiongateway/gateway/internal/testutil"
	"github.com/sessiongateway/gateway/leg/uds"
	"github.com/sessiongateway/gateway/testkit/standin"
)

func TestTheStandInBecomesTheListenerOfRecord(t *testing.T) {
	path := filepath.Join(testutil.ShortTempDir(t), "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	p := standin.Start(t)
	if err := uds.ProbeHeld(context.Background(), path, uds.Holder{PID: os.Getpid()}); err != nil {
		t.Fatalf("before the hand-over the test is the listener: %v", err)
	}
	<-accepted
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	f, err := ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := p.Listen(f); err != nil {
		t.Fatal(err)
	}
	if err := uds.ProbeHeld(context.Background(), path, uds.Holder{PID: p.PID}); err != nil {
		t.Fatalf("after the hand-over the stand-in is the listener: %v", err)
	}
	if err := <-accepted; err != nil {
		t.Fatalf("the test no longer accepts: %v", err)
	}
}

func TestWhatTheStandInDialsComesFromItsProcess(t *testing.T) {
	path := filepath.Join(testutil.ShortTempDir(t), "s.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := standin.Start(t)
	c, err := p.Dial(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	cred, err := uds.PeerCred(got)
	if err != nil || cred.PID != p.PID {
		t.Fatalf("peer %+v, %v; want the stand-in's pid %d", cred, err, p.PID)
	}
	if _, err := c.Write([]byte("hi\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 3)
	if _, err := got.Read(buf); err != nil || string(buf) != "hi\n" {
		t.Fatalf("read %q, %v", buf, err)
	}
}
