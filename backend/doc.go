// Package backend chooses the BLAS that every numeric package in fairdp uses.
//
// The portable build uses gonum's pure-Go BLAS. Built with the `openblas` tag
// (the Makefile adds it when libopenblas is installed), gonum's blas32/blas64
// are switched to OpenBLAS through cgo at start-up (and package graph hands
// Implementation to Gorgonia's tensor package), which is 4–15× faster for the large products of the CNNs.
// Importing this package (directly or through nn, linear, …) is enough.
package backend
