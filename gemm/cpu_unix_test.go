//go:build unix

package gemm_test

import "syscall"

// cpuSeconds is the process's user+system CPU time so far: GFLOP per CPU
// second is the steadier figure when other jobs share the cores.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
