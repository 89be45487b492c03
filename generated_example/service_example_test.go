package example_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zkgen/zkgen/generated_example/coord"
	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// The service kind from the spec: one process registers through the
// generated constructor under coord.Run; another, with its own
// Services, finds the instance typed, with its payload, at Curator's
// node <root>/services/payments/<id>.
func TestServiceFromTheSpec(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run := func(d *runtime.Services[coord.PaymentsInstance]) {
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() {
			done <- coord.Run(rctx, srv.Servers(), func(ctx context.Context, c *coord.Client) error {
				return d.Run(ctx, c.Session())
			})
		}()
		t.Cleanup(func() {
			stop()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Run: %v", err)
			}
		})
	}
	server, client := coord.NewPayments(), coord.NewPayments()
	run(server)
	run(client)
	reg, err := server.Register(ctx, runtime.ServiceInstance[coord.PaymentsInstance]{
		Name: coord.PaymentsName, Address: "10.0.0.7", Port: 8080,
		Payload: coord.PaymentsInstance{Zone: "eu-1", Version: "1.4"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := client.Instances(ctx, "payments")
	if err != nil {
		t.Fatal(err)
	}
	if len(ins) != 1 || ins[0].ID != reg.ID || ins[0].Address != "10.0.0.7" || ins[0].Port != 8080 ||
		ins[0].Payload != (coord.PaymentsInstance{Zone: "eu-1", Version: "1.4"}) {
		t.Fatalf("the finder sees %+v; want the registration %+v", ins, reg)
	}
	s, err := runtime.Connect(ctx, srv.Servers())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ok, err := s.Exists(ctx, "/zkgen-example/services/payments/"+reg.ID); !ok || err != nil {
		t.Fatalf("Curator's node /zkgen-example/services/payments/%s: exists %v, %v", reg.ID, ok, err)
	}
}
