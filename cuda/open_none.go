//go:build !cuda && !cudaemu

package cuda

func checkDevice() error { return Check() }

func openDevice() (Device, error) { return nil, Check() }
