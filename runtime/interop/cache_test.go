package interop_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/internal/peers"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// TestCacheEventsAgreeWithPeers: a runtime.Cache of /base/{name}, Curator's
// CuratorCache and kazoo's TreeCache of /base, each on its own session,
// see the same events: the same instances at their load, then, for a
// seeded sequence of creations, changes and deletions made one at a time
// (each seen by all three before the next), the same event with the same
// value for each write, in the same order. A node below an instance
// (which the peers mirror and zkgen's template does not) is left out of
// the comparison.
func TestCacheEventsAgreeWithPeers(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 3*time.Minute)
	w := connect(t, srv)
	base := testRoot(t)
	for _, p := range []string{"/zkgen-interop", base, base + "/a", base + "/b", base + "/b/below"} {
		if _, err := w.Conn().Create(p, []byte("0"), 0, zkWorld); err != nil && !isExists(err) {
			t.Fatal(err)
		}
	}
	obs := []*cacheObserver{zkgenObserver(t, ctx, connect(t, srv), base)}
	obs = append(obs, curatorWatch(t, srv, base), kazooWatch(t, srv, base))
	want := []string{"created " + base + "/a 0", "created " + base + "/b 0"}
	for _, o := range obs {
		if got := o.load(t, ctx, base); !slices.Equal(got, want) {
			t.Errorf("%s loaded %q, want %q", o.name, got, want)
		}
	}
	rng := rand.New(rand.NewPCG(45, 1))
	held := map[string]bool{"a": true, "b": true}
	for step := range 40 {
		name := string(rune('a' + rng.IntN(5)))
		p, v := base+"/"+name, fmt.Sprintf("v%d", step)
		var line string
		switch {
		case !held[name]:
			_, err := w.Conn().Create(p, []byte(v), 0, zkWorld)
			check(t, err)
			line = "created " + p + " " + v
		case rng.IntN(3) == 0:
			deleteAll(t, w, p)
			line = "deleted " + p
		default:
			_, err := w.Conn().Set(p, []byte(v), -1)
			check(t, err)
			line = "changed " + p + " " + v
		}
		held[name] = !strings.HasPrefix(line, "deleted")
		for _, o := range obs {
			if got := o.next(t, ctx, base); got != line {
				t.Fatalf("step %d: %s saw %q, want %q", step, o.name, got, line)
			}
		}
	}
}

// cacheObserver is one cache's events as lines: "created <path> <data>",
// "changed <path> <data>", "deleted <path>", "initialized".
type cacheObserver struct {
	name  string
	lines <-chan string
}

// next returns the next event of an instance of base (a child of base),
// skipping the others (base itself, nodes below instances).
func (o *cacheObserver) next(t *testing.T, ctx context.Context, base string) string {
	t.Helper()
	for {
		select {
		case l, ok := <-o.lines:
			if !ok {
				t.Fatalf("%s ended", o.name)
			}
			if strings.HasPrefix(l, "error") {
				t.Fatalf("%s: %s", o.name, l)
			}
			if l == "initialized" {
				return l
			}
			f := strings.Fields(l)
			if len(f) >= 2 && strings.HasPrefix(f[1], base+"/") && !strings.Contains(f[1][len(base)+1:], "/") {
				return l
			}
		case <-ctx.Done():
			t.Fatalf("%s: %v", o.name, context.Cause(ctx))
		}
	}
}

// load returns the instance events up to initialized, sorted (the peers
// give them in no set order).
func (o *cacheObserver) load(t *testing.T, ctx context.Context, base string) []string {
	var out []string
	for l := o.next(t, ctx, base); l != "initialized"; l = o.next(t, ctx, base) {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// zkgenObserver runs a runtime.Cache of base/{name} on s and gives its
// events as lines (Synced, the first time, as initialized).
func zkgenObserver(t *testing.T, ctx context.Context, s *runtime.Session, base string) *cacheObserver {
	c, err := runtime.NewCache(runtime.TemplateAt(base).Str("name"), runtime.PathKey, runtime.StringCodec())
	check(t, err)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx, s) }()
	lines := make(chan string, 64)
	evs := c.Events(ctx)
	go func() {
		for ev := range evs {
			switch ev.Kind {
			case runtime.CacheAdded:
				lines <- "created " + ev.Key + " " + ev.Value
			case runtime.CacheChanged:
				lines <- "changed " + ev.Key + " " + ev.Value
			case runtime.CacheRemoved:
				lines <- "deleted " + ev.Key
			case runtime.CacheSynced:
				lines <- "initialized"
			default:
				lines <- "error " + ev.Kind.String()
			}
		}
	}()
	return &cacheObserver{name: "zkgen", lines: lines}
}

// curatorWatch runs testdata/CuratorCacheWatch.java on base.
func curatorWatch(t *testing.T, srv *zktest.Server, base string) *cacheObserver {
	src, err := filepath.Abs(filepath.Join("testdata", "CuratorCacheWatch.java"))
	check(t, err)
	java, cp, err := peers.Curator(src, filepath.Join(buildDir, "cachewatch"))
	requirePeer(t, err)
	return watchProcess(t, "curator", java, "-Xmx96m", "-XX:+UseSerialGC", "-cp", cp, "CuratorCacheWatch",
		"zk="+strings.Join(srv.Servers(), ","), "path="+base)
}

// kazooWatch runs testdata/kazoo_treecache.py on base.
func kazooWatch(t *testing.T, srv *zktest.Server, base string) *cacheObserver {
	k := kazoo(t)
	script, err := filepath.Abs(filepath.Join("testdata", "kazoo_treecache.py"))
	check(t, err)
	return watchProcess(t, "kazoo", k.python, "-u", script, "zk="+strings.Join(srv.Servers(), ","), "path="+base)
}

// watchProcess starts a watcher process and gives its output's lines. At
// the end of the test it is told to quit, and killed (by PID) if it has
// not exited within a minute.
func watchProcess(t *testing.T, name, bin string, args ...string) *cacheObserver {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	cmd.Stderr = &peers.Output{Limit: 16 << 10}
	out, err := cmd.StdoutPipe()
	check(t, err)
	in, err := cmd.StdinPipe()
	check(t, err)
	if err := zktest.StartCommand(cmd); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	lines, done := make(chan string, 64), make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		_, _ = io.WriteString(in, "quit\n")
		in.Close()
		go func() {
			for range lines { // unblock the reader
			}
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-done
		}
	})
	return &cacheObserver{name: name, lines: lines}
}

var zkWorld = zk.WorldACL(zk.PermAll)

func isExists(err error) bool { return errors.Is(err, zk.ErrNodeExists) }

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// deleteAll deletes p and the nodes below it, children first.
func deleteAll(t *testing.T, s *runtime.Session, p string) {
	t.Helper()
	for _, k := range children(t, s, p) {
		deleteAll(t, s, p+"/"+k)
	}
	check(t, s.Conn().Delete(p, -1))
}
