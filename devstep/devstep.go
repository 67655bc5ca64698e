package devstep

import "math/rand/v2"

// DPSGD is one DP-SGD step as the loop asks a device for it (trainer.DPSGD
// on the CPU does the same): every sample's whole gradient clipped to Clip,
// N(0, NoiseStd²) added to each coordinate of the clipped sum (NoiseStd =
// σ·C), the result scaled by Scale (1 / expected batch size) and applied
// by the optimizer the device was loaded with. Non-private SGD is a step
// with no reachable Clip, no noise and Scale 1/n.
type DPSGD struct {
	Clip, NoiseStd, Scale float64
	// Noise is the run's noise stream: the device draws this step's noise
	// key from it (128 bits) before anything else of the step. Nil when
	// NoiseStd is 0 and Group is nil: nothing is drawn.
	Noise *rand.Rand
	// Group, when set, makes the clip a group policy's (DPSGD-F, Naive):
	// Clip is then the threshold of the per-group counts the policy reads,
	// and its rule sets each sample's factor and the noise std.
	Group *GroupClip
}

// GroupClip is the part of a DPSGD step that makes its clip group-wise.
type GroupClip struct {
	// Groups is each sample's group, in 0..Count-1.
	Groups []int32
	// Count is the number of groups K.
	Count int
	// Rule is called once per step, also for an empty batch, with the only
	// statistics of the batch that leave the device: for each group g,
	// above[g] samples whose gradient norm exceeds DPSGD.Clip and atMost[g]
	// the others. What it returns sets every sample's factor and the noise,
	// replacing DPSGD.NoiseStd.
	Rule func(above, atMost []int32) (GroupRule, error)
	// OnDevice, when set, is the same rule in a form the device evaluates
	// itself, so that the step waits for nothing mid-step; Rule is then
	// not called.
	OnDevice *DeviceRule
}

// The clip policies a DeviceRule describes (Xu, Du and Wu 2021).
const (
	PolicyAdaptive = 0 // DPSGD-F: per-group bounds from noisy clipped and unclipped counts
	PolicyNaive    = 1 // Naïve: per-group weights from noisy group sizes
)

// The count guards of DPSGD-F's bounds (package dpsgdf's CountGuard).
const (
	GuardC0     = 0
	GuardFloor  = 1
	GuardSmooth = 2
)

// DeviceRule is a group clip policy's rule as data, for a device that
// computes the step's bounds, weights and noise std from its own counts
// (package dpsgdf's DPSGD-F and Naïve; its CountGuard.Bounds and
// NaiveWeights are the maths, which the device repeats operation for
// operation). The counts' noise is drawn by the host before the step, from
// the policy's own stream in the order its Rule draws it, so a seeded run
// releases the same counts on the device as on the CPU.
type DeviceRule struct {
	Policy int // PolicyAdaptive or PolicyNaive
	Guard  int // GuardC0, GuardFloor or GuardSmooth (PolicyAdaptive)
	// C0 is the base bound, Batch the expected batch size b, Strength
	// GuardSmooth's prior strength (σ1), Sigma the gradient's noise
	// multiplier σ2 (the noise std is Sigma times the rule's sensitivity).
	C0, Batch, Strength, Sigma float64
	// Noise is each released count's noise: PolicyAdaptive the K counts of
	// clipped, then the K of unclipped gradients; PolicyNaive the K group
	// sizes. Released count j is float64(count_j) + Noise[j].
	Noise []float64
	// Done is called once the step's result is back (a step later), for a
	// step the device did not refuse, with the released counts as the
	// device computed them. It is the policy's own rule on those counts
	// (its bookkeeping included), and the device checks that its bounds,
	// weights and noise std are the ones it used, bit for bit.
	Done func(released []float64) (GroupRule, error)
}

// GroupRule is how a step with a group clip policy clips: sample i of group
// g gets the factor Weights[g]·min(1, Bounds[g]/‖g_i‖), and the clipped sum
// gets noise of std NoiseStd (σ times the policy's sensitivity).
type GroupRule struct {
	Bounds, Weights []float64 // one per group
	NoiseStd        float64
}

// The parts of the ERMI regularizer ψ_i a FermiPass covers (Lowy et al.
// 2022): every term, the terms that do not depend on the sample's sensitive
// attribute, or the terms that do.
const (
	FermiFull         = 0
	FermiNonSensitive = 1
	FermiSensitive    = 2
)

// FermiPass is one output gradient of a DP-FERMI step: for every sample,
// dz_i = Loss·∂ℓ_i/∂z + Fair·∂ψ_i(Part)/∂z with respect to the logits z, and
// W's per-sample gradient ∂ψ_i(Part)/∂W.
type FermiPass struct {
	On         bool
	Loss, Fair float64
	Part       int // FermiFull, FermiNonSensitive or FermiSensitive
}

// FermiStep is one DP-FERMI step as package fermi plans it
// (DPFERMI.DeviceStep): the regularizer's state and which terms are clipped
// and which are summed as they are. Package cuda's DeviceFermi runs it
// (cuda.FermiStep is this type).
//
// The released θ gradient is Scale·(Σ_i c_i g_i + N(0, NoiseStd²)) +
// Σ_i h_i, applied by the device's update at rate LR, where g_i is sample
// i's parameter gradient for the Clipped pass's output gradient, c_i =
// min(1, Clip/‖(g_i, WWeight·w_i)‖) its clip factor (w_i its W gradient,
// jointly clipped; W is not in the norm when WWeight is 0), and h_i the
// parameter gradient of the Exact pass. Either pass may be off.
type FermiStep struct {
	// Groups k and Classes l size W: Mats() matrices of k×l, row-major,
	// matrix t = the label for EqualizedOdds, else 0.
	Groups, Classes int
	EqualizedOdds   bool
	// W is the regularizer's W now; InvSqrt[t·k+r] is 1/sqrt(p̂(r)) of
	// matrix t (0 for an empty group).
	W, InvSqrt []float64

	Clipped, Exact FermiPass
	Clip, WWeight  float64
	NoiseStd       float64
	Scale          float64
	// LR is the rate of θ's update. The loop leaves it 0: a device sets it
	// from the optimizer it was loaded with (trainer.Device.Load).
	LR float32
	// Noise, when set, is the run's noise stream: the device draws θ's
	// noise key from it when it issues the step, so that the step need not
	// wait for its host half (which draws W's noise from the same stream
	// after it, as the CPU step does) and the host half comes back with
	// the step's result, a step later. Nil: the key is drawn in the host
	// half (Device.FermiStep's finish), mid-step.
	Noise *rand.Rand
}

// Mats is the number of W matrices.
func (s FermiStep) Mats() int {
	if s.EqualizedOdds {
		return s.Classes
	}
	return 1
}

// FermiSums is what a DP-FERMI step brings back to the host: sums over the
// batch, never per-sample values.
type FermiSums struct {
	N    int     // samples in the batch
	Loss float64 // Σ_i ℓ_i
	// WClipped is Σ_i c_i w_i of the Clipped pass (c_i = 1 when WWeight is
	// 0), WExact Σ_i w_i of the Exact pass, each Mats()·k·l values; nil
	// when the pass is off.
	WClipped, WExact []float64
	Psi              float64 // Σ_i ψ_i with every term, W as the step began
	Clipped          int     // samples whose joint norm exceeded Clip
}
