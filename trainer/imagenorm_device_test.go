//go:build cudaemu || cuda

package trainer

import "testing"

// Bagdasaryan et al. 2019's MNIST regime (shuffled fixed-size batches, SGD
// momentum 0.5, inputs standardised with MNIST's public mean and deviation)
// on the device agrees with the CPU engine, as DP-SGD's default regime
// does (TestOnDeviceMNISTMatchesCPU): the device reads the same
// standardised inputs and applies the same momentum.
func TestOnDeviceTheirRegimeMatchesCPU(t *testing.T) {
	cfg := deviceConfig("dpsgd")
	cfg.Dataset, cfg.DataDir, cfg.Model, cfg.Limit, cfg.Batch = "mnist", "testdata/mnist-sample", "mnist-cnn", 256, 64
	cfg.Privacy.Sampling, cfg.Momentum = "shuffle", 0.5
	cfg.ImageMean, cfg.ImageStd = []float64{0.1307}, []float64{0.3081}
	compareDeviceRuns(t, cfg, nil)
}
