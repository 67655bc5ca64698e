//go:build unix

package models

import "syscall"

// maxRSSKB is the process's peak resident set size in KiB (Linux units).
func maxRSSKB() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return int64(ru.Maxrss)
}
