package trainer

import (
	"fmt"
	"math"
	"slices"

	"github.com/fairdp/fairdp/loaders"
)

// Input normalisation of image data by given constants.
//
// Reference implementations feed their networks standardised pixels, and
// the scale of the inputs sets how large the per-sample gradients are, so
// how many of them a clip bound C cuts: Bagdasaryan et al. 2019's DP-SGD
// code for MNIST ("Differential privacy has disparate impact on model
// accuracy", the regime Xu, Du and Wu 2021 replicate) uses
// Normalize(0.1307, 0.3081), fairdp's default is p/255. Config.ImageMean
// and Config.ImageStd give such constants. They are public numbers the
// caller states, never statistics fitted on the (private) training data, so
// they spend no privacy and nothing goes to not_covered.

// validateImageNorm checks ImageMean/ImageStd without the data: both given
// or neither, of one length, finite, and every deviation positive.
func validateImageNorm(mean, std []float64) FieldErrors {
	var errs FieldErrors
	if len(mean) == 0 && len(std) == 0 {
		return nil
	}
	if len(mean) != len(std) {
		errs.Add("ImageMean", "and ImageStd need one value per channel each (got %d and %d)", len(mean), len(std))
		return errs
	}
	for c := range mean {
		if math.IsNaN(mean[c]) || math.IsInf(mean[c], 0) {
			errs.Add("ImageMean", "must be finite (channel %d is %v)", c, mean[c])
		}
		if !(std[c] > 0) || math.IsInf(std[c], 0) {
			errs.Add("ImageStd", "must be positive and finite (channel %d is %v)", c, std[c])
		}
	}
	return errs
}

// applyImageNorm makes train and test standardise their pixels with
// cfg.ImageMean and cfg.ImageStd ((p/255 − mean[c]) / std[c]) when they are
// given, replacing the data set's own scaling (p/255, or UTKFace's ImageNet
// constants). It refuses tabular data and a channel count the constants do
// not match.
func applyImageNorm(cfg Config, train, test *loaders.Dataset) error {
	if len(cfg.ImageMean) == 0 && len(cfg.ImageStd) == 0 {
		return nil
	}
	if errs := validateImageNorm(cfg.ImageMean, cfg.ImageStd); len(errs) > 0 {
		return errs
	}
	if !train.IsImage() {
		return FieldErrors{{Field: "ImageMean", Msg: fmt.Sprintf("normalises image data; %s is tabular (its schema scales its columns)", train.Name)}}
	}
	if len(cfg.ImageMean) != train.C {
		return FieldErrors{{Field: "ImageMean", Msg: fmt.Sprintf("has %d values; %s has %d channels", len(cfg.ImageMean), train.Name, train.C)}}
	}
	note := fmt.Sprintf("pixels standardised as (p/255 - mean)/sd with the given public constants mean %v, sd %v (no privacy spent)",
		cfg.ImageMean, cfg.ImageStd)
	for _, d := range []*loaders.Dataset{train, test} {
		d.Standardise, d.Mean, d.Std = true, slices.Clone(cfg.ImageMean), slices.Clone(cfg.ImageStd)
		d.Notes = append(d.Notes, note)
	}
	return nil
}
