package zkresolver_test

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"

	"github.com/zkgen/zkgen/contrib/zkresolver"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// startServer runs a gRPC server (the health service) on 127.0.0.1 and
// returns its port and a stop function.
func startServer(t *testing.T) (int, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	healthpb.RegisterHealthServer(s, health.NewServer())
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return ln.Addr().(*net.TCPAddr).Port, s.Stop
}

// callUntil calls the service until the answering server's port is want
// n times in a row (a call to another server, or one that fails, starts
// the count again), bounded by ctx.
func callUntil(t *testing.T, ctx context.Context, c healthpb.HealthClient, want, n int) {
	t.Helper()
	run := 0
	for run < n {
		var p peer.Peer
		_, err := c.Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Peer(&p))
		if ctx.Err() != nil {
			t.Fatalf("never %d calls in a row to port %d (last: %v, %v)", n, want, p.Addr, err)
		}
		if err == nil && p.Addr.(*net.TCPAddr).Port == want {
			run++
		} else {
			run = 0
		}
	}
}

// Real gRPC servers come and go; the client, dialing zk:///echo through
// the resolver, follows their registrations: the first server, then both
// (each answers), then only the second after the first unregistered and
// stopped (20 calls in a row to it, with round_robin).
func TestResolverFollowsRegistrations(t *testing.T) {
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d := runtime.NewServices[struct{}](runtime.At("/zkresolver-test"))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = runtime.Supervise(runCtx, srv.Servers(), d.Run)
	}()
	defer func() { stop(); <-done }()
	portA, stopA := startServer(t)
	portB, _ := startServer(t)
	register := func(id string, port int) {
		if _, err := d.Register(ctx, runtime.ServiceInstance[struct{}]{Name: "echo", ID: id, Address: "127.0.0.1", Port: port}); err != nil {
			t.Fatal(err)
		}
	}
	register("a", portA)
	conn, err := grpc.NewClient("zk:///echo", grpc.WithResolvers(zkresolver.NewBuilder(d)),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(`{"loadBalancingConfig": [{"round_robin":{}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	c := healthpb.NewHealthClient(conn)
	callUntil(t, ctx, c, portA, 5)
	register("b", portB)
	callUntil(t, ctx, c, portB, 1)
	callUntil(t, ctx, c, portA, 1)
	if err := d.Unregister(ctx, "echo", "a"); err != nil {
		t.Fatal(err)
	}
	stopA()
	callUntil(t, ctx, c, portB, 20)
}
