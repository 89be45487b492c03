package cli

import (
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/templates"
)

// zkgen sim serves the simulator on a loopback port until interrupted; a
// ZooKeeper client works against it; an address that is not loopback is
// refused.
func TestSimCommand(t *testing.T) {
	r := zkgen(t, "sim", "--addr", "0.0.0.0:0")
	if r.code != ExitFailure || !strings.Contains(r.stderr, "loopback addresses only") {
		t.Fatalf("sim on 0.0.0.0: exit %d, stderr %q", r.code, r.stderr)
	}

	out := &writes{ch: make(chan string, 16)}
	code := make(chan int, 1)
	go func() {
		code <- run([]string{"sim", "--addr", "127.0.0.1:0", "--servers", "2"}, out, io.Discard, templates.Generate)
	}()
	line := <-out.ch
	m := regexp.MustCompile(`serving ZooKeeper on (127\.0\.0\.1:\d+),(127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("first line %q names no two addresses", line)
	}
	addr := m[2] // the second server sees what the client writes there
	c, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Create("/hello", []byte("sim"), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatalf("create on the simulator: %v", err)
	}
	data, _, err := c.Get("/hello")
	if err != nil || string(data) != "sim" {
		t.Fatalf("get: %q, %v", data, err)
	}
	c.Close()
	interruptSelf(t)
	for {
		select {
		case got := <-code:
			if got != ExitOK {
				t.Fatalf("sim exit %d after an interrupt", got)
			}
			return
		case <-out.ch: // "stopped"
		}
	}
}
