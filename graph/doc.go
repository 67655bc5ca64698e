// Package graph connects fairdp models with Gorgonia expression graphs, the
// way Go users already describe networks: Gorgonia is fairdp's
// model-definition front end, fairdp's own layers are the engine.
//
// fairdp trains on its own layers (package nn: explicit forward and backward
// passes on BLAS, with the taps that per-sample clipping reads), because
// Gorgonia v0.9.18's VM is 4–5× slower on these models and would need
// per-sample gradient copies (README, nn/doc.go). So a Gorgonia network is
// not run by Gorgonia during training; it is rewritten as nn layers:
//
//   - Lower (lower.go) reads a graph from its output back to its input and
//     recognises the patterns Gorgonia's builders expand into — a dense
//     layer's Mul (or BatchedMatMul) of the input with a weight, or with
//     Transpose(W) of a weight stored {out, in} (BatchedMatMul's transB),
//     and its broadcast bias if it has one (without one it becomes nn's
//     Linear without a bias, NewLinearNoBias, so the parameter list is the
//     graph's); Mul(x, w) with a weight vector and an optional scalar bias
//     (a one-output dense layer whose output is a {batch} vector);
//     Conv2d's im2col, reshapes, product and transpose, with any kernel,
//     stride and pad per axis (nn.ConvWindow), with its broadcast bias or
//     without one (nn.NewConv2dNoBias, as Gorgonia's examples write it);
//     Rectify's x ⊙ (x ≥ 0); LeakyRelu's masked sum; MaxPool2D; Tanh;
//     Sigmoid; Dropout; a flattening Reshape and its inverse back to
//     images (nn.Unflatten); an Add of two branches that
//     start from one node and end in one shape (a residual join, the
//     identity or a projection as one branch: nn.Residual holds each
//     branch's layers, so the model stays a sequence of layers and its
//     per-sample norms stay exact, each block lying in one inner layer);
//     and a SoftMax, LogSoftMax or one-output Sigmoid head (on {batch, 1}
//     or {batch}), which is folded into fairdp's cross-entropy loss; or no
//     head and one value per record that a squared error in the program
//     reads, a regression (HeadSquaredError: Classes 1, trained with the
//     squared loss on a regression schema's targets, as examples/iris). It
//     returns a Lowered: the models.Model to train (trainer.TrainPrivate),
//     the head, and the graph's learnable nodes in the model's Params
//     order. A program's graph may hold more (its loss, L2 terms, Grad and
//     update nodes): only the path from the input to the output is
//     lowered, and Lowered says what was left (rest.go): learnable nodes
//     off that path (Untouched), and L2 terms c·Σθ², used as weight decay
//     2c when one c covers every block, else dropped with a note. Anything
//     else is refused with an error naming the node, its op and Supported
//     — among them BatchNorm (it mixes the records of a batch, which
//     per-sample clipping cannot bound; GroupNorm is the private
//     alternative), an output of several values per record that a squared
//     error reads (a multi-output regression), a dilated
//     convolution, another reshape, a weight shared by two
//     layers and an output that does not depend on the input; shapes are
//     checked against the nn layers before anything is trained. The op
//     geometry Gorgonia keeps unexported (im2col's kernel, pad, stride,
//     dilation; MaxPool's window) is read by reflection, so the package is
//     tied to Gorgonia v0.9.18's op types.
//   - Lowered.WriteBack copies the trained weights into the learnable
//     nodes' backing tensors (a transposed dense weight transposed back),
//     so inference goes on in Gorgonia (with G.EvalMode() when the graph
//     has a Dropout); Lowered.LoadWeights does the same from a checkpoint
//     trained on the command line from the lowered layer list (`fairdp
//     train --model-spec`).
//   - Build (zoo.go) is the inverse: a fairdp model as a Gorgonia graph with
//     its weights. Zoo and its wrappers Logistic, MLP, MNISTCNN and VGG
//     build the zoo as Gorgonia graphs with the weights models.New draws, so
//     Lower(Zoo(spec)) is models.New(spec) bit for bit.
//   - Export (export.go) is Build plus the training loss and Gorgonia's
//     symbolic gradient, compiled into a TapeMachine: the independent slow
//     path the tests compare fairdp's engine with (logits and every
//     parameter gradient to 1e-9 in float64, per-sample norms and clipped
//     sums sample by sample), for every zoo architecture and, on users'
//     own graphs, for every op Lower supports.
//
// Two Gorgonia v0.9.18 faults shape the tests: SoftMax and LogSoftMax of
// the same node hash alike, so asking for both returns one node (the
// reference loss reads an identity reshape of the logits); and Dropout's
// gradient is dy/p for the drop probability p (not dy/(1−p)), 0 when p = 0,
// so Dropout is checked against nn's own slow path, and against Gorgonia in
// evaluation only.
//
// Only programs that import this package link Gorgonia: the fairdp binary
// does not. Importing it hands the BLAS chosen by package backend (OpenBLAS
// in the openblas build) to Gorgonia's tensor package.
//
// The package is left out of `cuda` builds: Gorgonia switches to its own
// CUDA ops under the same build tag and then needs cuDNN, which fairdp does
// not require.
package graph
