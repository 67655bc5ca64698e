package fermi

import "github.com/fairdp/fairdp/trainer"

// Result is report.json's extra.fermi: DP-FERMI's settings, the final W
// and the ERMI of the model's soft predictions on the test set, with the
// noise of a private run.
type Result struct {
	Lambda    float64   `json:"lambda"`
	Fairness  string    `json:"fairness"`
	LRW       float64   `json:"lr_w"`
	Radius    float64   `json:"radius"`
	GroupFreq []float64 `json:"group_freq"`
	W         []float64 `json:"w"`
	// ERMI is the exponential Rényi mutual information of the test
	// predictions and the sensitive attribute (ERMI).
	ERMI    float64 `json:"test_ermi"`
	Private bool    `json:"private"`
	// Noise is set for a private run; its fields sit beside the others.
	*Noise
}

// Noise is a private DP-FERMI run's clipping and noise (DPFERMI's fields of
// the same names).
type Noise struct {
	Scope            string  `json:"scope"`
	Calibration      string  `json:"calibration"`
	Clip             float64 `json:"clip"`
	Sensitivity      float64 `json:"sensitivity"`
	Sigma            float64 `json:"sigma"`
	WWeight          float64 `json:"w_weight"`
	WSensitivity     float64 `json:"w_sensitivity"`
	StdTheta         float64 `json:"noise_std_theta"`
	StdW             float64 `json:"noise_std_w"`
	WNoise           float64 `json:"w_noise_step"`
	GroupCountsSigma float64 `json:"group_counts_sigma"`
}

// TestERMI implements trainer.ERMIResult.
func (r *Result) TestERMI() float64 { return r.ERMI }

// ResultOf is a DP-FERMI report's extra.fermi, from a run or read from
// report.json (nil for other reports).
func ResultOf(rep *trainer.Report) *Result {
	r, _ := trainer.ExtraOf[*Result](rep, Name)
	return r
}
