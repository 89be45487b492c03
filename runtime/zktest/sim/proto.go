package sim

// Facts of ZooKeeper's protocol (opcodes, error codes, flags, xids), as
// ZooKeeper 3.8 has them.

// Opcodes.
const (
	opNotification    int32 = 0
	opCreate          int32 = 1
	opDelete          int32 = 2
	opExists          int32 = 3
	opGetData         int32 = 4
	opSetData         int32 = 5
	opGetACL          int32 = 6
	opSetACL          int32 = 7
	opGetChildren     int32 = 8
	opSync            int32 = 9
	opPing            int32 = 11
	opGetChildren2    int32 = 12
	opCheck           int32 = 13
	opMulti           int32 = 14
	opCreate2         int32 = 15
	opCreateContainer int32 = 19
	opCreateTTL       int32 = 21
	opCheckWatches    int32 = 17
	opRemoveWatches   int32 = 18
	opAddWatch        int32 = 106
	opAuth            int32 = 100
	opSetWatches      int32 = 101
	opSetWatches2     int32 = 105
	opCloseSession    int32 = -11
	opError           int32 = -1
)

// Reserved xids.
const (
	xidNotification int32 = -1
	xidPing         int32 = -2
	xidAuth         int32 = -4
	xidSetWatches   int32 = -8
)

// Code is a ZooKeeper error code.
type Code int32

// The error codes the simulator returns.
const (
	codeOK                      Code = 0
	codeRuntimeInconsistency    Code = -2
	codeMarshallingError        Code = -5
	codeUnimplemented           Code = -6
	codeBadArguments            Code = -8
	codeNoNode                  Code = -101
	codeNoAuth                  Code = -102
	codeBadVersion              Code = -103
	codeNoChildrenForEphemerals Code = -108
	codeNodeExists              Code = -110
	codeNotEmpty                Code = -111
	codeSessionExpired          Code = -112
	codeInvalidACL              Code = -114
	codeAuthFailed              Code = -115
	codeNoWatcher               Code = -121
)

// Watcher types of checkWatches and removeWatches, and addWatch's modes.
const (
	watcherChildren            int32 = 1
	watcherData                int32 = 2
	watcherAny                 int32 = 3
	watcherPersistent          int32 = 4
	watcherPersistentRecursive int32 = 5

	addWatchPersistent          int32 = 0
	addWatchPersistentRecursive int32 = 1
)

// Create flags (CreateMode).
const (
	modePersistent           int32 = 0
	modeEphemeral            int32 = 1
	modePersistentSequential int32 = 2
	modeEphemeralSequential  int32 = 3
	modeContainer            int32 = 4
	modePersistentTTL        int32 = 5
	modePersistentSeqTTL     int32 = 6
)

// Watch event types, and the one state a live connection's events carry.
const (
	eventNodeCreated         int32 = 1
	eventNodeDeleted         int32 = 2
	eventNodeDataChanged     int32 = 3
	eventNodeChildrenChanged int32 = 4
	stateSyncConnected       int32 = 3
)

// Permissions.
const (
	permRead   int32 = 1
	permWrite  int32 = 2
	permCreate int32 = 4
	permDelete int32 = 8
	permAdmin  int32 = 16
	permAll    int32 = 31
)

// maxTTL is the largest TTL a node may have: 40 bits of milliseconds.
const maxTTL int64 = 1<<40 - 1

// ACL is one access control entry.
type ACL struct {
	Perms  int32
	Scheme string
	ID     string
}

// Stat is a node's stat, as replies carry it.
type Stat struct {
	Czxid          int64
	Mzxid          int64
	Ctime          int64
	Mtime          int64
	Version        int32
	Cversion       int32
	Aversion       int32
	EphemeralOwner int64
	DataLength     int32
	NumChildren    int32
	Pzxid          int64
}
