package coord_test

import (
	"os"
	"testing"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// One ZooKeeper for the package's examples, which use the fixed paths of
// zkgen.yaml: each leaves only empty directories behind (no item, lock
// node, member, value or transaction), so they also run again and again
// against one server given by ZK_SERVERS.
var (
	shared    *zktest.Server
	sharedErr error
)

func TestMain(m *testing.M) {
	shared, sharedErr = zktest.StartProcess()
	zktest.ExamplesNeedServer(sharedErr)
	code := m.Run()
	if shared != nil {
		shared.Close()
	}
	os.Exit(code)
}
