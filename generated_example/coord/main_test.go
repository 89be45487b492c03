package coord_test

import (
	"os"
	"testing"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// One ZooKeeper for the package's examples, which use the fixed paths of
// zkgen.yaml: each example leaves them as it found them.
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
