package interop_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zkgen/zkgen/internal/peers"
	"github.com/zkgen/zkgen/runtime"
)

// Curator's discovery jar (Debian libcurator-discovery-java); its
// manifest brings Jackson, the framework and the client.
const curatorDiscoveryJar = "/usr/share/java/curator-x-discovery.jar"

var (
	discoveryOnce sync.Once
	discoveryCP   string
	discoveryJava string
	discoveryErr  error
)

// discoveryPeer compiles testdata/CuratorDiscovery.java once and returns
// the java binary and classpath, or ends the test without Curator.
func discoveryPeer(t *testing.T) (java, classpath string) {
	t.Helper()
	discoveryOnce.Do(func() {
		if _, err := os.Stat(curatorDiscoveryJar); err != nil {
			discoveryErr = fmt.Errorf("%w: %s (Debian libcurator-discovery-java)", peers.ErrNotInstalled, curatorDiscoveryJar)
			return
		}
		src, err := filepath.Abs(filepath.Join("testdata", "CuratorDiscovery.java"))
		if err != nil {
			discoveryErr = err
			return
		}
		t.Setenv(peers.EnvCuratorClasspath, curatorDiscoveryJar+":/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar")
		discoveryJava, discoveryCP, discoveryErr = peers.Curator(src, filepath.Join(buildDir, "discovery"))
	})
	requirePeer(t, discoveryErr)
	return discoveryJava, discoveryCP
}

func startDiscovery(t *testing.T, args ...string) *peer {
	java, cp := discoveryPeer(t)
	argv := append([]string{"-Xmx96m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", cp, "CuratorDiscovery"}, args...)
	return startPeer(t, "curator-discovery", java, argv...)
}

type discoPayload struct {
	Zone   string `json:"zone"`
	Weight int    `json:"weight"`
}

// runDiscovery runs d on a session of the shared server until the test ends.
func runDiscovery(t *testing.T, d *runtime.Services[discoPayload]) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	s := connect(t, server(t))
	go func() { defer close(done); _ = d.Run(ctx, s) }()
	t.Cleanup(func() { cancel(); <-done })
}

// Go registers two instances with a typed payload (WithJavaClass naming
// Curator's payload class); Curator's ServiceCache finds both, typed, and
// its round-robin ServiceProvider gives each in turn.
func TestCuratorFindsGoServices(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 3*time.Minute)
	base := testRoot(t)
	d := runtime.NewServices[discoPayload](runtime.At(base), runtime.WithJavaClass("CuratorDiscovery$Payload"))
	runDiscovery(t, d)
	for i, id := range []string{"go-a", "go-b"} {
		_, err := d.Register(ctx, runtime.ServiceInstance[discoPayload]{Name: "payments", ID: id, Address: "10.0.0.1",
			Port: 8080 + i, Payload: discoPayload{Zone: "eu", Weight: i + 1}})
		if err != nil {
			t.Fatal(err)
		}
	}
	p := startDiscovery(t, "zk="+strings.Join(srv.Servers(), ","), "base="+base, "name=payments", "mode=find", "count=2")
	if err := p.wait(ctx); err != nil {
		t.Fatal(err)
	}
	out := p.out.String()
	for _, want := range []string{
		"instance id=go-a address=10.0.0.1 port=8080 zone=eu weight=1 enabled=true type=DYNAMIC\n",
		"instance id=go-b address=10.0.0.1 port=8081 zone=eu weight=2 enabled=true type=DYNAMIC\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("Curator did not print %q; output:\n%s", want, p.out.Tail(20))
		}
	}
	if a, b := strings.Count(out, "provider id=go-a\n"), strings.Count(out, "provider id=go-b\n"); a != 2 || b != 2 {
		t.Errorf("Curator's provider gave go-a %d and go-b %d times of 4, want 2 each; output:\n%s", a, b, p.out.Tail(20))
	}
}

// Curator registers an instance; Go finds it, typed, with Curator's
// fields, and its provider gives it.
func TestGoFindsCuratorServices(t *testing.T) {
	srv := server(t)
	ctx := testCtx(t, 3*time.Minute)
	base := testRoot(t)
	d := runtime.NewServices[discoPayload](runtime.At(base))
	runDiscovery(t, d)
	changes := d.Changes(ctx, "payments")
	p := startDiscovery(t, "zk="+strings.Join(srv.Servers(), ","), "base="+base, "name=payments", "mode=register",
		"id=java-1", "address=10.0.0.9", "port=9090", "zone=us", "weight=7")
	for ev := range changes {
		if ev.Kind == runtime.CacheAdded {
			break
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("Curator's instance never showed; output:\n%s", p.out.Tail(20))
	}
	got, err := d.Instances(ctx, "payments")
	if err != nil || len(got) != 1 {
		t.Fatalf("Instances: %+v, %v", got, err)
	}
	in := got[0]
	if in.ID != "java-1" || in.Address != "10.0.0.9" || in.Port != 9090 || in.SSLPort != 0 || in.Payload != (discoPayload{"us", 7}) ||
		in.Type != runtime.ServiceDynamic || in.Disabled || in.Registered.IsZero() {
		t.Fatalf("Go read %+v", in)
	}
	if pick, err := d.Provider("payments", runtime.RoundRobin, 0).Instance(); err != nil || pick.ID != "java-1" {
		t.Fatalf("provider: %+v, %v", pick, err)
	}
}
