package coord_test

import (
	"os"
	"testing"
	"time"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// One ZooKeeper for the package's examples, which use the fixed paths of
// zkgen.yaml: each leaves only empty directories behind (no item, lock
// node, member, value or transaction; the counters' examples print what
// they added, not the total), so they also run again and again
// against one server given by ZK_SERVERS (which must allow TTL nodes for
// ExampleClient_Leases: zookeeper.extendedTypesEnabled=true).
var (
	shared    *zktest.Server
	sharedErr error
)

func TestMain(m *testing.M) {
	shared, sharedErr = zktest.StartProcess(zktest.WithTTLNodes(100 * time.Millisecond))
	zktest.ExamplesNeedServer(sharedErr)
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}
