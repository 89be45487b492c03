package runtime

// The node names of the recipes' layouts that a tool watching a recipe
// from outside needs (zkgen serve sets its watches on them). The recipes
// build their paths from these names, so a tool that uses them follows a
// layout change.
const (
	// DoubleBarrierReady is the child a double barrier's last arrival
	// creates.
	DoubleBarrierReady = readyName
	// ElectionLeaderNode is the child holding an election's acknowledged
	// leader.
	ElectionLeaderNode = electionAck
	// PartitionerMembersDir and PartitionerOwnersDir hold a partitioner's
	// member nodes and its owner nodes.
	PartitionerMembersDir = partitionerMembers
	PartitionerOwnersDir  = partitionerOwners
	// KazooSemaphoreLockSuffix names the sibling directory of kazoo's
	// semaphore lock: <dir> + KazooSemaphoreLockSuffix.
	KazooSemaphoreLockSuffix = kazooLockSuffix
)

// SemaphoreDirs are the children of a semaphore (Curator's layout) whose
// children are its state: the internal lock's and the leases' directories.
func SemaphoreDirs() []string { return []string{semaphoreLocksDir, semaphoreLeasesDir} }

// QueueWatchDirs are the directories below a queue (any kind, either
// delivery) whose children are its state, relative to the queue's path; a
// "*" segment stands for every child of that name pattern (the buckets,
// the priority levels).
func QueueWatchDirs() []string {
	return []string{
		bucketPrefix + "*",
		levelPrefix + "*",
		levelPrefix + "*/" + bucketPrefix + "*",
		levelPrefix + "*/" + claimsDir, // a priority level is a FIFO queue of its own
		levelPrefix + "*/" + deadDir,
		claimsDir,
		deadDir,
	}
}
