package dpops

// Noise comes in two kinds here, because the two uses have different needs.
//
// Buffers (AddGaussian, AddLaplace) are the noisy gradient sums of DP-SGD:
// one draw per model parameter per step (1.6M for the VGG-like CNN), so they
// use the fast textbook samplers of math/rand/v2 (ziggurat Gaussian,
// exponential with a random sign) on the run's CSPRNG stream. Each value is
// drawn in float64, added to the element in float64 and rounded once to T, so
// float32 buffers lose nothing beyond their own precision.
//
// Released scalars (ScalarGaussian, ScalarLaplace) are counts, group sizes,
// sums and standard errors that leave the program directly. Mironov (2012,
// "On significance of the least significant bits for differential privacy")
// showed that textbook floating-point noise leaks them: the set of doubles
// that value + Laplace(b) can produce depends on value (the noise has holes
// that shift with it), so one output can rule out adjacent inputs and
// identify the true value with high probability. These samplers follow
// Google's differential-privacy library ("Secure noise generation",
// github.com/google/differential-privacy common_docs/Secure_Noise_Generation.pdf):
// the input is rounded to a power-of-two lattice with spacing g (tiny
// relative to the noise) and an integer number of lattice steps is added,
// drawn as an integer — a two-sided geometric for Laplace, a symmetric
// binomial for Gaussian. Floating-point error inside those samplers can only
// perturb the probabilities of integers slightly; it cannot make an output
// impossible for one input and possible for its neighbour. The output is
// always a multiple of g and its distribution around the rounded input does
// not depend on the input, so there are no holes to exploit. The cost is
// resolution: outputs are quantised to g ≈ 2⁻⁴⁰ of the Laplace scale (2⁻⁵⁶
// of the Gaussian std). Rounding the input moves adjacent inputs apart by at
// most g: the Laplace sampler pays for it by using sensitivity Δ+g (as the
// library does); for the Gaussian (the library does not adjust either) it
// raises ρ = Δ²/(2σ²) by a factor of about 1 + 2g/Δ < 1 + σ·2⁻⁵⁴, i.e. by
// less than 10⁻¹² relative for noise multipliers σ ≤ 10⁴.
//
// Why a port and not the library itself: its noise package draws from its
// own global crypto/rand reader (so seeded runs could not be reproducible),
// its Gaussian takes (ε, δ) rather than σ, and importing it needs
// github.com/golang/glog v1.2.0, which go.sum does not pin. The sampling code
// below (geometric, twoSidedGeometric, symmetricBinomial,
// binomialProbability, ceilPowerOfTwo) is adapted from
// github.com/google/differential-privacy/go/v3@v3.0.0/noise (Apache License
// 2.0) with its crypto/rand helpers replaced by draws from a *rand.Rand. One
// construction serves seeded and unseeded runs; secrecy comes from the stream
// (NewRand without a seed is a CSPRNG), reproducibility from a seeded stream.
//
// The fast buffer samplers are NOT hardened against floating-point attacks; nor
// are those of the usual DP-SGD libraries, and Jin et al. ("Are we there
// yet? Timing and floating-point attacks on differential privacy systems",
// IEEE S&P 2022) showed that textbook floating-point Gaussian samplers are
// open to the same kind of attack. fairdp never releases a noisy gradient sum
// on its own: it is scaled by the learning rate and added to float32
// weights, which rounds away the low-order bits such attacks read. That is a
// mitigation, not a proof. Where a noisy vector is released as it is (a
// SteFFLe silo's message, tailoring's and DP regression's float64 iterates),
// AddGaussianHardened draws every element with the scalar sampler instead.
// A central --dtype float64 run keeps the fast sampler (a hardened 1.6M-value
// buffer per step would cost seconds) and its receipt says so.

import (
	"fmt"
	"math"
	"math/bits"
	mrand "math/rand/v2"
)

// Float is the element type of a buffer that can be noised.
type Float interface{ ~float32 | ~float64 }

// AddGaussian adds independent N(0, std²) noise to every element of dst: the
// Gaussian mechanism over a whole gradient buffer. std is the absolute
// standard deviation (noise multiplier × clipping norm); std = 0 leaves dst
// unchanged (a non-private run). See the package notes in noise.go on
// precision and on floating-point attacks.
func AddGaussian[T Float](r *mrand.Rand, dst []T, std float64) error {
	if err := checkBufferNoise("AddGaussian", "std", r, std); err != nil {
		return err
	}
	if std == 0 {
		return nil
	}
	for i, v := range dst {
		// The explicit float64 keeps std·z rounded on its own: without it
		// a compiler may fuse the multiply and the add (Go does for
		// GOAMD64=v3), and the noise drawn ahead (addDrawn, whose
		// assembly never fuses) would no longer give the same bits.
		dst[i] = T(float64(v) + float64(std*r.NormFloat64()))
	}
	return nil
}

// AddGaussianHardened is AddGaussian drawn element by element with
// ScalarGaussian's floating-point-safe sampler. It is for noisy vectors that
// leave the program as they are, where the rounding to float32 weights that
// mitigates attacks on AddGaussian's output does not happen: a SteFFLe
// silo's messages, and the float64 iterates of tailoring's stage 2 and of DP
// linear regression. It costs about 3 µs per element
// (BenchmarkAddGaussianHardened), against nanoseconds for AddGaussian, which
// is why DP-SGD's gradient buffers do not use it.
func AddGaussianHardened[T Float](r *mrand.Rand, dst []T, std float64) error {
	if err := checkBufferNoise("AddGaussianHardened", "std", r, std); err != nil {
		return err
	}
	if std == 0 {
		return nil
	}
	for i, v := range dst {
		out, err := ScalarGaussian(r, float64(v), std, 1)
		if err != nil {
			return fmt.Errorf("dpops.AddGaussianHardened: element %d: %w", i, err)
		}
		dst[i] = T(out)
	}
	return nil
}

// AddLaplace adds independent Laplace(0, scale) noise (density
// exp(-|x|/scale)/(2·scale), variance 2·scale²) to every element of dst: the
// Laplace mechanism over a buffer, with scale = L1 sensitivity / ε.
// scale = 0 leaves dst unchanged.
func AddLaplace[T Float](r *mrand.Rand, dst []T, scale float64) error {
	if err := checkBufferNoise("AddLaplace", "scale", r, scale); err != nil {
		return err
	}
	if scale == 0 {
		return nil
	}
	// Laplace = random sign × Exp(1) × scale; one Uint64 gives 64 signs.
	var signs uint64
	left := 0
	for i, v := range dst {
		if left == 0 {
			signs, left = r.Uint64(), 64
		}
		e := scale * r.ExpFloat64()
		if signs&1 != 0 {
			e = -e
		}
		signs >>= 1
		left--
		dst[i] = T(float64(v) + e)
	}
	return nil
}

func checkBufferNoise(fn, name string, r *mrand.Rand, scale float64) error {
	if r == nil {
		return fmt.Errorf("dpops.%s: nil *rand.Rand (make one with NewRand or Source.Derive)", fn)
	}
	if !(scale >= 0) || math.IsInf(scale, 0) {
		return fmt.Errorf("dpops.%s: %s = %v, want a finite number ≥ 0", fn, name, scale)
	}
	return nil
}

const (
	// laplaceGranularityParam sets the Laplace lattice spacing to about
	// scale/2⁴⁰ (the library's granularityParam): fine enough to be invisible
	// next to the noise, coarse enough that the geometric sampler's parameter
	// λ = gε/(Δ+g) stays about 2⁻⁴⁰ (≥ 2⁻⁵¹ even at the smallest accepted ε),
	// far above the 2⁻⁵⁹ below which it may truncate.
	laplaceGranularityParam = 1 << 40
	// binomialBound is the largest √n of the symmetric binomial behind the
	// Gaussian (the library's value): √n lies in (2⁵⁶, 2⁵⁷], where the binomial
	// is within float64 resolution of a Gaussian and overflow has probability
	// about 2⁻⁴⁵.
	binomialBound = 1 << 57
	// minEpsilon is the smallest ε ScalarLaplace accepts (the library's
	// CheckEpsilonVeryStrict bound); below it the geometric sampler may
	// truncate.
	minEpsilon = 0x1p-50
)

// geometricBound caps the two-sided geometric draws inside symmetricBinomial
// so that stepSize × draw cannot overflow int64.
var geometricBound = math.MaxInt64/int64(math.Round(math.Sqrt2*binomialBound+1)) - 1

// ScalarLaplace returns value + Laplace noise of scale l1Sensitivity/epsilon,
// an ε-DP release of a scalar whose L1 sensitivity is l1Sensitivity, drawn
// with the floating-point-safe geometric construction described in noise.go
// (the defence against Mironov's 2012 attack). The result is a multiple of a
// power of two g ≈ scale·2⁻⁴⁰, and the noise uses sensitivity l1Sensitivity+g
// to pay for rounding value to that lattice.
func ScalarLaplace(r *mrand.Rand, value, l1Sensitivity, epsilon float64) (float64, error) {
	if err := checkScalar("ScalarLaplace", r, value, "l1Sensitivity", l1Sensitivity); err != nil {
		return 0, err
	}
	if !(epsilon >= minEpsilon) || math.IsInf(epsilon, 0) {
		return 0, fmt.Errorf("dpops.ScalarLaplace: epsilon = %v, want a finite number ≥ 2⁻⁵⁰", epsilon)
	}
	g := ceilPowerOfTwo(l1Sensitivity / epsilon / laplaceGranularityParam)
	if math.IsNaN(g) {
		return 0, fmt.Errorf("dpops.ScalarLaplace: noise scale l1Sensitivity/epsilon = %v/%v is too large to sample", l1Sensitivity, epsilon)
	}
	k := twoSidedGeometric(r, g*epsilon/(l1Sensitivity+g))
	out := roundToMultipleOfPowerOfTwo(value, g) + float64(k)*g
	if math.IsInf(out, 0) || math.IsNaN(out) {
		return 0, fmt.Errorf("dpops.ScalarLaplace: value %v with noise scale %v overflows float64", value, l1Sensitivity/epsilon)
	}
	return out, nil
}

// ScalarGaussian returns value + N(0, (sigma·l2Sensitivity)²) noise: the
// Gaussian mechanism for one scalar with L2 sensitivity l2Sensitivity and
// noise multiplier sigma (so one release is 1/(2σ²)-zCDP), drawn with the
// floating-point-safe binomial construction described in noise.go (the
// defence against Mironov's 2012 attack). The result is a multiple of a
// power of two g ≈ std·2⁻⁵⁶.
func ScalarGaussian(r *mrand.Rand, value, l2Sensitivity, sigma float64) (float64, error) {
	if err := checkScalar("ScalarGaussian", r, value, "l2Sensitivity", l2Sensitivity); err != nil {
		return 0, err
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return 0, fmt.Errorf("dpops.ScalarGaussian: sigma = %v, want a finite noise multiplier > 0", sigma)
	}
	std := sigma * l2Sensitivity
	// 2·std/2⁵⁷ must be a normal float64 so that ceilPowerOfTwo is exact and
	// √n = 2·std/g lands in (2⁵⁶, 2⁵⁷].
	if !(2*std/binomialBound >= 0x1p-1022) || math.IsInf(std, 0) {
		return 0, fmt.Errorf("dpops.ScalarGaussian: noise std sigma·l2Sensitivity = %v·%v = %v is below 2⁻⁹⁶⁶ or infinite", sigma, l2Sensitivity, std)
	}
	g := ceilPowerOfTwo(2 * std / binomialBound)
	if math.IsNaN(g) {
		return 0, fmt.Errorf("dpops.ScalarGaussian: noise std %v is too large to sample", std)
	}
	k := symmetricBinomial(r, 2*std/g)
	out := roundToMultipleOfPowerOfTwo(value, g) + float64(k)*g
	if math.IsInf(out, 0) || math.IsNaN(out) {
		return 0, fmt.Errorf("dpops.ScalarGaussian: value %v with noise std %v overflows float64", value, std)
	}
	return out, nil
}

func checkScalar(fn string, r *mrand.Rand, value float64, sensName string, sens float64) error {
	if r == nil {
		return fmt.Errorf("dpops.%s: nil *rand.Rand (make one with NewRand or Source.Derive)", fn)
	}
	if math.IsInf(value, 0) || math.IsNaN(value) {
		return fmt.Errorf("dpops.%s: value = %v, want a finite number", fn, value)
	}
	if !(sens > 0) || math.IsInf(sens, 0) {
		return fmt.Errorf("dpops.%s: %s = %v, want a finite number > 0", fn, sensName, sens)
	}
	return nil
}

// ceilPowerOfTwo returns the smallest power of two ≥ x, exactly, for finite
// x > 0 (a subnormal x gives 2⁻¹⁰²²); NaN when x is not positive and finite or
// the power would overflow.
func ceilPowerOfTwo(x float64) float64 {
	if !(x > 0) || math.IsInf(x, 0) {
		return math.NaN()
	}
	const exponentMask, mantissaMask = 0x7ff0000000000000, 0x000fffffffffffff
	b := math.Float64bits(x)
	if b&mantissaMask == 0 {
		return x // already a power of two
	}
	exp := b & exponentMask
	if exp >= math.Float64bits(math.MaxFloat64)&exponentMask {
		return math.NaN()
	}
	return math.Float64frombits(exp + 1<<52) // next exponent, zero mantissa
}

// roundToMultipleOfPowerOfTwo rounds x to the nearest multiple of g (exact
// when g is a power of two).
func roundToMultipleOfPowerOfTwo(x, g float64) float64 {
	return math.Round(x/g) * g
}

// uniformOpen returns a float64 in (0, 1] such that every float64 in the
// interval has positive probability (not only multiples of 2⁻⁵³), as the
// library's rand.Uniform: a 53-bit mantissa scaled by 2^-G with G geometric.
func uniformOpen(r *mrand.Rand) float64 {
	m := r.Uint64() & (1<<53 - 1)
	u := (1 + float64(m)/(1<<53)) / math.Pow(2, float64(geometricHalf(r)))
	if u == 0 {
		return 1
	}
	return u
}

// geometricHalf returns the number of fair coin flips up to and including
// the first head (1, 2, … with probabilities 1/2, 1/4, …).
func geometricHalf(r *mrand.Rand) int64 {
	n := int64(1)
	for {
		w := r.Uint64()
		n += int64(bits.LeadingZeros64(w))
		if w != 0 {
			return n
		}
	}
}

// geometric returns the number of Bernoulli trials up to and including the
// first success, success probability p = 1 − e^−λ, truncated to MaxInt64
// (probability < 10⁻⁶ for λ > 2⁻⁵⁹). It binary-searches the sample with
// interval probabilities in closed form instead of inverting a floating-point
// CDF, so no output value is unreachable.
func geometric(r *mrand.Rand, lambda float64) int64 {
	if uniformOpen(r) > -math.Expm1(-lambda*math.MaxInt64) {
		return math.MaxInt64
	}
	left, right := int64(0), int64(math.MaxInt64) // (left, right]
	for left+1 < right {
		// A midpoint that splits the remaining mass roughly in half.
		mid := left - int64(math.Floor((math.Log(0.5)+math.Log1p(math.Exp(lambda*float64(left-right))))/lambda))
		if mid <= left {
			mid = left + 1
		} else if mid >= right {
			mid = right - 1
		}
		// P(X ≤ mid | left < X ≤ right).
		q := math.Expm1(lambda*float64(left-mid)) / math.Expm1(lambda*float64(left-right))
		if uniformOpen(r) <= q {
			right = mid
		} else {
			left = mid
		}
	}
	return right
}

// twoSidedGeometric returns an integer k with P(k) ∝ e^{−λ|k|}: the discrete
// Laplace distribution.
func twoSidedGeometric(r *mrand.Rand, lambda float64) int64 {
	for {
		k := geometric(r, lambda) - 1
		positive := r.Uint64()&1 == 1
		// Keep 0 only with one sign, or 0 would be twice as likely as it should.
		if k != 0 || positive {
			if positive {
				return k
			}
			return -k
		}
	}
}

// symmetricBinomial returns m such that m + n/2 is (to within the accuracy of
// Lemma 7 of the Secure Noise Generation note) Binomial(n, 1/2), with √n =
// sqrtN, by Bringmann et al.'s rejection sampler (ICALP 2014): a two-sided
// geometric number of blocks of width ≈ √(2n), a uniform offset inside the
// block, accepted with probability ∝ the binomial mass. Its standard
// deviation is sqrtN/2.
func symmetricBinomial(r *mrand.Rand, sqrtN float64) int64 {
	step := int64(math.Round(math.Sqrt2*sqrtN + 1))
	for {
		// Failures before the first success of a fair coin, capped.
		blocks := min(geometricHalf(r)-1, geometricBound)
		signed := blocks
		if r.Uint64()&1 == 1 {
			signed = -signed - 1
		}
		m := step*signed + r.Int64N(step)
		p := binomialProbability(sqrtN, m)
		if p > 0 && uniformOpen(r) < p*float64(step)*math.Pow(2, float64(blocks))/4 {
			return m
		}
	}
}

// binomialProbability approximates P(m + n/2) for Binomial(n, 1/2), √n =
// sqrtN, from below (Lemma 7 of the Secure Noise Generation note); 0 outside
// |m| ≤ √n·√(ln √n / 2).
func binomialProbability(sqrtN float64, m int64) float64 {
	fm := float64(m)
	if math.Abs(fm) > sqrtN*math.Sqrt(math.Log(sqrtN)/2) {
		return 0
	}
	return math.Sqrt(2/math.Pi) / sqrtN *
		math.Exp(-2*fm*fm/(sqrtN*sqrtN)) *
		(1 - 0.4*math.Pow(2, 1.5)*math.Pow(math.Log(sqrtN), 1.5)/sqrtN)
}
