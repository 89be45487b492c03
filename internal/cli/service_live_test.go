package cli

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime"
	"github.com/zkgen/zkgen/runtime/zktest"
)

// zkgen inspect shows each declared service's instances, whoever
// registered them: one registered through runtime.Services and two
// written as Curator writes them (Jackson's "@class" in the payload, no
// enabled field as before CURATOR-275, or enabled false), in the table
// and in --json; a service with none shows 0.
func TestLiveService(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: needs ZooKeeper")
	}
	srv := zktest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	chdirTemp(t)
	root := fmt.Sprintf("/zkgen-cli-%d-%d", os.Getpid(), liveSeq.Add(1))
	writeFile(t, "zkgen.yaml", "version: 1\npackage: coord\nroot: "+root+"\ntypes:\n  Endpoint: {fields: {zone: string}}\nresources:\n"+
		"  payments: {kind: service, path: /services, instance: Endpoint}\n"+
		"  orders: {kind: service, path: /services, instance: Endpoint, name: orders-v2}\n")
	servers := "--servers=" + strings.Join(srv.Servers(), ",")
	s := liveConnect(t, srv)
	type endpoint struct {
		Zone string `json:"zone"`
	}
	d := runtime.NewServices[endpoint](runtime.At(root + "/services"))
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- d.Run(runCtx, s) }()
	defer func() { stop(); <-ran }()
	goInst, err := d.Register(ctx, runtime.ServiceInstance[endpoint]{Name: "payments", ID: "go-1", Address: "10.0.0.7", Port: 8080,
		Payload: endpoint{Zone: "eu-1"}})
	if err != nil {
		t.Fatal(err)
	}
	curator := map[string]string{
		"java-1": `{"name":"payments","id":"java-1","address":"10.0.0.8","port":null,"sslPort":8443,"payload":{"@class":"com.example.Endpoint","zone":"us-1"},"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":null}`,
		"java-2": `{"name":"payments","id":"java-2","address":"10.0.0.9","port":9090,"sslPort":null,"payload":null,"registrationTimeUTC":1700000000000,"serviceType":"STATIC","uriSpec":null,"enabled":false}`,
	}
	for id, data := range curator {
		if _, err := s.Conn().Create(root+"/services/payments/"+id, []byte(data), 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	snap := inspectJSON(t, servers)
	if len(snap.Resources) != 2 || snap.Resources[0].Service == nil || snap.Resources[1].Service == nil {
		t.Fatalf("resources %+v", snap.Resources)
	}
	if r := snap.Resources[0]; r.Path != root+"/services/payments" {
		t.Errorf("payments at %s, want its own node", r.Path)
	}
	ins := snap.Resources[0].Service.Instances
	if len(ins) != 3 || ins[0].ID != "go-1" || ins[1].ID != "java-1" || ins[2].ID != "java-2" {
		t.Fatalf("payments instances %+v, want go-1, java-1, java-2", ins)
	}
	if g := ins[0]; g.Address != "10.0.0.7" || g.Port != 8080 || !g.Enabled || !g.Registered.Equal(goInst.Registered) ||
		g.Payload == nil || g.Payload.Words() != "zone eu-1" {
		t.Errorf("the Go registration: %+v", g)
	}
	if j := ins[1]; j.Address != "10.0.0.8" || j.Port != 0 || j.SSLPort != 8443 || !j.Enabled ||
		!j.Registered.Equal(time.UnixMilli(1700000000000)) || j.Payload == nil || !strings.Contains(j.Payload.Words(), "zone us-1") {
		t.Errorf("Curator's registration without enabled: %+v", j)
	}
	if j := ins[2]; j.Enabled || j.Type != "STATIC" || j.Payload != nil {
		t.Errorf("Curator's disabled registration: %+v", j)
	}
	if n := len(snap.Resources[1].Service.Instances); n != 0 {
		t.Errorf("orders-v2 has %d instances, want 0", n)
	}
	text := zkgen(t, "inspect", servers)
	for _, want := range []string{"3 instances (2 enabled)", "instance go-1", "10.0.0.7:8080", "10.0.0.8 ssl:8443",
		"10.0.0.9:9090 disabled static", "registered ", "0 instances"} {
		if !strings.Contains(text.stdout, want) {
			t.Errorf("inspect text lacks %q:\n%s", want, text.stdout)
		}
	}
}
