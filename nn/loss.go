package nn

import (
	"fmt"
	"math"
)

// SoftmaxCrossEntropy writes each sample's cross-entropy loss
// −log softmax(z_i)[y_i] into loss[i] (computed with a stable log-sum-exp)
// and ∂(Σ_i weight_i·loss_i)/∂logits into dlogits, i.e.
// weight_i·(softmax(z_i) − onehot(y_i)). The batch size is len(labels);
// logits and dlogits are batch×classes. weight nil means all ones; loss or
// dlogits may be nil when not wanted. Labels outside [0, classes) panic:
// the loaders validate labels, so that is a programming error.
func SoftmaxCrossEntropy[T Float](logits []T, labels []int, classes int, weight []T, loss []T, dlogits []T) {
	n := len(labels)
	checkLossArgs("SoftmaxCrossEntropy", logits, n*classes, weight, loss, dlogits, n)
	for i, y := range labels {
		if y < 0 || y >= classes {
			panic(fmt.Sprintf("nn.SoftmaxCrossEntropy: sample %d has label %d, want 0..%d", i, y, classes-1))
		}
		z := logits[i*classes : (i+1)*classes]
		m, lse := logSumExp(z)
		if loss != nil {
			loss[i] = T(lse - float64(z[y]))
		}
		if dlogits == nil {
			continue
		}
		w := 1.0
		if weight != nil {
			w = float64(weight[i])
		}
		s := math.Exp(lse - m) // Σ exp(z_j − m)
		d := dlogits[i*classes : (i+1)*classes]
		for j, v := range z {
			d[j] = T(w * math.Exp(float64(v)-m) / s)
		}
		d[y] -= T(w)
	}
}

// SigmoidBCE is the binary cross-entropy of a one-logit model:
// loss[i] = log(1 + e^{z_i}) − y_i·z_i (stable for any z) and
// dlogits[i] = weight_i·(σ(z_i) − y_i). Labels must be 0 or 1; weight,
// loss and dlogits follow SoftmaxCrossEntropy's conventions.
func SigmoidBCE[T Float](logits []T, labels []int, weight []T, loss []T, dlogits []T) {
	sigmoidBCE("SigmoidBCE", logits, labels, weight, loss, dlogits, nil)
}

// Softmax writes the class probabilities softmax(z_i) of each row of
// logits (batch×classes) into probs.
func Softmax[T Float](logits []T, classes int, probs []T) {
	if classes < 1 || len(logits)%classes != 0 || len(probs) != len(logits) {
		panic(fmt.Sprintf("nn.Softmax: %d logits, %d probs are not batches of %d classes", len(logits), len(probs), classes))
	}
	for i := 0; i < len(logits); i += classes {
		z := logits[i : i+classes]
		_, lse := logSumExp(z)
		for j, v := range z {
			probs[i+j] = T(math.Exp(float64(v) - lse))
		}
	}
}

// Sigmoid writes the class probabilities (1 − p_i, p_i), p_i = σ(z_i), of a
// one-logit binary model into probs (batch×2), the form the fairness
// metrics and ERMI take for every model.
func Sigmoid[T Float](logits []T, probs []T) {
	if len(probs) != 2*len(logits) {
		panic(fmt.Sprintf("nn.Sigmoid: %d logits need %d probabilities, got %d", len(logits), 2*len(logits), len(probs)))
	}
	for i, z := range logits {
		// σ(z) and σ(−z) both need e^{−|z|} (−|z| is z or −z exactly).
		e := math.Exp(-math.Abs(float64(z)))
		probs[2*i] = T(sigmoidExp(-float64(z), e))
		probs[2*i+1] = T(sigmoidExp(float64(z), e))
	}
}

// logSumExp returns max(z) and log Σ exp(z_j), computed around the max.
func logSumExp[T Float](z []T) (m, lse float64) {
	m = math.Inf(-1)
	for _, v := range z {
		m = math.Max(m, float64(v))
	}
	var s float64
	for _, v := range z {
		s += math.Exp(float64(v) - m)
	}
	return m, m + math.Log(s)
}

// sigmoid is 1/(1+e^{−z}) without overflow for large |z|.
func sigmoid(z float64) float64 { return sigmoidExp(z, math.Exp(-math.Abs(z))) }

// sigmoidExp is sigmoid given e = e^{−|z|}: 1/(1+e) for z ≥ 0, e/(1+e)
// otherwise, the same operations on the same e as sigmoid always did
// (e^{−z} for z ≥ 0, e^{z} below), so callers that also need softplus
// compute the exponential once.
func sigmoidExp(z, e float64) float64 {
	if z >= 0 {
		return 1 / (1 + e)
	}
	return e / (1 + e)
}

// softplus is log(1 + e^z) without overflow or cancellation.
func softplus(z float64) float64 { return softplusExp(z, math.Exp(-math.Abs(z))) }

// softplusExp is softplus given e = e^{−|z|}.
func softplusExp(z, e float64) float64 { return math.Max(z, 0) + math.Log1p(e) }

func checkLossArgs[T Float](fn string, logits []T, want int, weight, loss, dlogits []T, n int) {
	if len(logits) != want {
		panic(fmt.Sprintf("nn.%s: %d logits for %d labels, want %d", fn, len(logits), n, want))
	}
	if weight != nil && len(weight) != n {
		panic(fmt.Sprintf("nn.%s: %d weights for %d labels", fn, len(weight), n))
	}
	if loss != nil && len(loss) != n {
		panic(fmt.Sprintf("nn.%s: loss has %d values for %d labels", fn, len(loss), n))
	}
	if dlogits != nil && len(dlogits) != want {
		panic(fmt.Sprintf("nn.%s: dlogits has %d values, want %d", fn, len(dlogits), want))
	}
}

// SquaredError is the squared loss of a regression output, one prediction
// per sample: loss[i] = (p_i − y_i)² and dpred[i] = weight_i·2(p_i − y_i).
// It is the per-sample term of the mean squared error Mean((p − y)²) that
// Gorgonia's examples/iris minimises (v0.9.18), so a batch of one has
// exactly that program's cost and gradient. The targets are real numbers
// (no label check); weight, loss and dpred follow SoftmaxCrossEntropy's
// conventions (loss unweighted, the gradient weighted).
func SquaredError[T Float](pred, targets []T, weight, loss, dpred []T) {
	n := len(targets)
	checkLossArgs("SquaredError", pred, n, weight, loss, dpred, n)
	for i, y := range targets {
		r := float64(pred[i]) - float64(y)
		if loss != nil {
			loss[i] = T(r * r)
		}
		if dpred == nil {
			continue
		}
		w := 1.0
		if weight != nil {
			w = float64(weight[i])
		}
		dpred[i] = T(w * 2 * r)
	}
}
