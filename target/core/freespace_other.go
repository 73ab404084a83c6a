//go:build !linux

package core

import "os"

// freeSpace returns 0: the free space is not known on this system.
func freeSpace(*os.File) int64 { return 0 }
