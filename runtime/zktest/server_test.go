package zktest_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/zktest"
)

func TestStandaloneStartCreateStop(t *testing.T) {
	s := zktest.Start(t)
	s.RequireLocal(t)
	if !strings.HasPrefix(s.Addr(), "127.0.0.1:") {
		t.Fatalf("Addr() = %q, want 127.0.0.1:port", s.Addr())
	}
	if got := s.Servers(); len(got) != 1 || got[0] != s.Addr() {
		t.Fatalf("Servers() = %v", got)
	}
	pid := s.PID()
	if pid <= 0 || !s.Running() {
		t.Fatalf("PID() = %d, Running() = %v after Start", pid, s.Running())
	}

	c := connect(t, s.Servers(), 5*time.Second)
	path := uniquePath(t)
	create(t, c, path, []byte("hello"), 0)
	data, _, ch, err := c.GetW(path)
	if err != nil || string(data) != "hello" {
		t.Fatalf("get %s = %q, %v", path, data, err)
	}
	_ = ch

	for cmd, want := range map[string]string{
		"ruok": "imok",
		"srvr": "Mode: standalone",
		"mntr": "zk_server_state\tstandalone",
		"cons": "queued=",
		"wchp": path,
		"wchc": fmt.Sprintf("0x%x", c.SessionID()),
	} {
		out, err := zktest.FourLetter(s.Addr(), cmd, 5*time.Second)
		if err != nil || !strings.Contains(out, want) {
			t.Errorf("FourLetter(%s) = %q, %v; want it to contain %q", cmd, out, err, want)
		}
	}
	if _, err := zktest.FourLetter(s.Addr(), "toolong", time.Second); err == nil {
		t.Error("FourLetter accepted a five-plus-letter command")
	}

	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	assertGone(t, pid)
	if s.PID() != 0 || s.Running() {
		t.Fatalf("after Stop: PID() = %d, Running() = %v", s.PID(), s.Running())
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	if _, err := zktest.FourLetter(s.Addr(), "ruok", time.Second); err == nil {
		t.Fatal("server still answers after Stop")
	}
}

func TestRestartKeepsData(t *testing.T) {
	s := zktest.Start(t)
	s.RequireLocal(t)
	addr, oldPID := s.Addr(), s.PID()
	c := connect(t, s.Servers(), 10*time.Second)
	path := uniquePath(t)
	create(t, c, path, []byte("persisted"), 0)

	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if s.Addr() != addr || s.PID() == oldPID || s.PID() == 0 {
		t.Fatalf("after Restart: Addr %s (was %s), PID %d (was %d)", s.Addr(), addr, s.PID(), oldPID)
	}
	assertGone(t, oldPID)
	// The same client reconnects to the same address and keeps its session.
	c.waitState(t, zk.StateHasSession, 15*time.Second)
	data, _, err := c.Get(path)
	if err != nil || string(data) != "persisted" {
		t.Fatalf("after restart get %s = %q, %v", path, data, err)
	}
}

func TestExternalServers(t *testing.T) {
	local := zktest.Start(t)
	local.RequireLocal(t)
	t.Setenv(zktest.EnvServers, local.Addr()+", ")

	s := zktest.Start(t)
	if !s.External() || s.Addr() != local.Addr() || len(s.Servers()) != 1 || s.PID() != 0 {
		t.Fatalf("external: External %v Addr %s Servers %v PID %d", s.External(), s.Addr(), s.Servers(), s.PID())
	}
	for name, f := range map[string]func() error{"Stop": s.Stop, "Start": s.Start, "Restart": s.Restart} {
		if err := f(); !errors.Is(err, zktest.ErrExternal) {
			t.Errorf("%s on external server = %v, want ErrExternal", name, err)
		}
	}
	c := connect(t, s.Servers(), 5*time.Second)
	if _, _, err := c.Exists("/"); err != nil {
		t.Fatalf("exists / on external server: %v", err)
	}
	t.Run("RequireLocal", func(t *testing.T) {
		s.RequireLocal(t)
		t.Fatal("RequireLocal did not skip for an external server")
	})
}

// fakeTB records how Start ends a test instead of ending the real one.
type fakeTB struct {
	testing.TB
	mu      sync.Mutex
	skipped bool
	fataled bool
	msg     string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Skip(args ...any) {
	f.mu.Lock()
	f.skipped, f.msg = true, fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Fatal(args ...any) {
	f.mu.Lock()
	f.fataled, f.msg = true, fmt.Sprint(args...)
	f.mu.Unlock()
	runtime.Goexit()
}

func (f *fakeTB) Cleanup(func()) {}

// runStart calls Start with f on its own goroutine (Skip and Fatal end it).
func runStart(f *fakeTB) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		zktest.Start(f)
	}()
	<-done
}

func TestMissingInstall(t *testing.T) {
	t.Setenv(zktest.EnvServers, "")
	t.Setenv(zktest.EnvClasspath, "/nonexistent/zookeeper.jar")

	_, err := zktest.StartProcess()
	if !errors.Is(err, zktest.ErrNotInstalled) || !strings.Contains(err.Error(), "apt-get install -y zookeeper") {
		t.Fatalf("StartProcess with a missing jar = %v", err)
	}
	if _, err := zktest.StartEnsembleProcess(3); !errors.Is(err, zktest.ErrNotInstalled) {
		t.Fatalf("StartEnsembleProcess with a missing jar = %v", err)
	}

	t.Setenv("CI", "")
	f := &fakeTB{TB: t}
	runStart(f)
	if !f.skipped || f.fataled || !strings.Contains(f.msg, zktest.EnvServers) {
		t.Fatalf("outside CI: skipped %v fataled %v msg %q", f.skipped, f.fataled, f.msg)
	}

	t.Setenv("CI", "true")
	f = &fakeTB{TB: t}
	runStart(f)
	if f.skipped || !f.fataled || !strings.Contains(f.msg, "apt-get install -y zookeeper") {
		t.Fatalf("under CI: skipped %v fataled %v msg %q", f.skipped, f.fataled, f.msg)
	}
}

func TestStartFailureQuotesLog(t *testing.T) {
	t.Setenv(zktest.EnvServers, "")
	// A server that cannot parse its configuration exits at once.
	_, err := zktest.StartProcess(zktest.WithConfig("tickTime", "not-a-number"))
	if errors.Is(err, zktest.ErrNotInstalled) {
		t.Skip(err)
	}
	if err == nil || !strings.Contains(err.Error(), "exited during start-up") || !strings.Contains(err.Error(), "not-a-number") {
		t.Fatalf("start with a bad config = %v; want an early exit quoting the log", err)
	}
	t.Logf("bad config: %.300s", err)
	// A deadline that has passed by the first poll.
	_, err = zktest.StartProcess(zktest.WithStartTimeout(time.Nanosecond))
	if err == nil || !strings.Contains(err.Error(), "not ready after") || !strings.Contains(err.Error(), "zktest: starting") {
		t.Fatalf("start with a 1ns deadline = %v; want a timeout quoting the log", err)
	}
	t.Logf("deadline: %.300s", err)
}
