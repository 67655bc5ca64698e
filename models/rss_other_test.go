//go:build !unix

package models

// maxRSSKB is unavailable here; the benchmark table then shows 0 MB.
func maxRSSKB() int64 { return 0 }
