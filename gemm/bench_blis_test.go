//go:build blis && cgo

package gemm_test

import "github.com/fairdp/fairdp/gemm/internal/blis"

func init() {
	extraImpls = append(extraImpls, impl{name: "blis", setup: blis.SetThreads, run: blis.Sgemm})
}
