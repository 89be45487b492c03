// Command zkgen generates typed Go handles for ZooKeeper coordination
// resources (locks, queues, barriers, elections, ...) from a YAML spec.
//
// Usage:
//
//	zkgen init                 write a starter zkgen.yaml
//	zkgen validate [-f spec]   check the spec, print every error
//	zkgen generate [-f spec]   write the generated Go files
//	zkgen diff [-f spec]       exit 1 with a unified diff when they are stale
//	zkgen inspect [--json]     show the live state of every declared resource
//	zkgen reap --older-than D  remove stale lock nodes (dry run without --yes)
//	zkgen provision            create the spec's persistent parent nodes
//	zkgen version              print the version
//
// Exit status is 0 on success, 1 for spec errors, bad usage and stale files,
// 2 for I/O failures and internal errors. See "zkgen help <command>".
package main

import (
	"os"

	"github.com/zkgen/zkgen/internal/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdout, os.Stderr))
}
