// Package federated is SteFFLe, after the SteFFLe paper: DP-FERMI trained by N silos
// (hospitals, banks) that never pool their records. Every round each silo
// samples its own batch and sends the server one DP-FERMI message — the
// θ descent direction (non-sensitive part exact or noised per --scope,
// sensitive part clipped and noised) and the noisy W ascent direction —
// calibrated with its own record count ñ and charged to its own
// accountant, so every message is differentially private on its own
// (inter-silo record-level DP). The server averages the messages, weighted
// by the silos' record counts (ñ_i / n; the paper's silos are equal, where
// this is its plain mean), and takes the descent/ascent step with W
// projected on the radius-D ball. N = 1 is central DP-FERMI, bit for bit.
//
// Why a package of its own: the silo computation is exactly one DP-FERMI
// step (package fermi), but who holds the model, how batches, noise and
// budgets are split over silos, and how messages travel (in one process for
// experiments, over gRPC with mutual TLS across machines) are federation
// concerns that DP-FERMI must not know about.
//
// Hybrid federations (trainer.Config.Federation.Mode sensitive-silo or
// mapping) split records: a record's features and label live on one silo
// and its sensitive attribute s on another. The unit of computation is then
// a Lane, the records of one (feature silo, sensitive silo) pair: the
// feature silo samples the lane's batch and ships the sampled records'
// features and labels to the sensitive silo, which runs DP-FERMI's step on
// them with its own noise and accountant and sends the server the lane's
// message. So raw s and un-noised s-dependent quantities never leave the
// silo that holds s; features and labels do, which --scope sensitive
// allows (only s is private) and --scope all forbids (such runs are
// refused). A silo's lanes hold disjoint records, so its ε is the largest
// of its lanes' (parallel composition); a silo holding no s releases
// nothing private. The lanes' arithmetic is that of the horizontal
// federation with the same split: one silo holding every s beside N
// feature silos trains, with the same seed, exactly the model of the N
// horizontal silos. Hybrid federations run in one process (train and
// sweep); across processes only horizontal federations are implemented.
//
// The parts:
//
//   - Silo is one DP-FERMI party (a silo, or in a hybrid federation a
//     lane): its data, sampler, DP-FERMI instance, a ledger (the run's
//     accountant, PLD unless RDP is asked for, of everything it ever
//     released) that refuses over-budget rounds, and request validation.
//     Info says which accountant; the server refuses silos that disagree.
//     A silo's privacy settings (ε, δ, clip, σ, accountant, sampling) are
//     DP-FERMI's options (fermi.Options), read from the Config once where
//     the federation is built (NewSilo, New) and passed to every silo as
//     values: the silo, its ledger and its release settings see the
//     numbers its DP-FERMI instance calibrates with, and a federation-wide
//     change (Federation.TotalDelta's δ) is made to those values, not to a
//     Config the silos then read again.
//   - SiloState (state.go) is the ledger on disk, the released noisy
//     group counts and the last answer, written atomically and synced
//     before an answer leaves the silo. A restarted silo continues it (a
//     new σ, from other epochs or ε, adds receipt lines and never rewrites
//     history; the budget can only go down), reuses the counts, and
//     answers a resumed round with the stored message, so any crash of any
//     party resumes without losing or double-spending budget. The state
//     also records every setting that changes what a message releases
//     (ReleaseSettings: scope, clip, λ, σ rule, fairness, public group
//     sizes, sampling, model; and δ): the ledger's noise multipliers mean
//     a privacy loss only under those settings, so a restart that changes
//     one is refused before the file is touched. Each silo's δ is 1/ñ² of
//     its own records.
//   - Messages a server operator acts on say what to do: a silo whose
//     budget is spent says so (an error wrapping accounting.ErrBudgetExceeded) whatever round it is asked for;
//     a certificate of another federation is ErrTLS naming which side
//     refused which certificate, not an unreachable silo (confirmedTLS
//     waits for the silo's verdict on the server's certificate).
//   - Server runs the rounds against any []Client (in-process silos or
//     gRPC connections), retries unreachable silos with back-off,
//     checkpoints after every round so a stopped run can resume, and
//     collects the silos' receipts (Privacy).
//   - Steffle is the trainer.Algorithm (--algo steffle) that simulates the
//     federation in one process with the trainer's loop and outputs; it
//     reads trainer.Config.Federation.
//   - protocol.go holds what the SteFFLe authors' code's protocol adds,
//     each an option off by default (preset steffle-credit-authors turns
//     them on): StepDecay, a step decay of the server's η_θ (applied to
//     the aggregated gradient in the round exchange that Steffle and
//     Server share, so both take the same decayed steps), and Checkpoint
//     averaging (Federation.AverageEvery/AverageFrom: Steffle evaluates
//     the model after the chosen epochs and reports the mean beside the
//     last iterate's metrics). Federation.TotalDelta gives every silo δ =
//     1/n² of the whole training set, as that code does.
//   - Heterogeneous splits records over silos by a silo attribute with
//     heterogeneity h ∈ [0, 1]; Mapping assigns the sensitive and
//     non-sensitive parts of records to silos by record id (ReadMapping
//     reads it from a CSV file) and Lanes groups them.
//   - Serve and Dial carry the protocol over gRPC (a hand-written service
//     with a gob codec, no protoc), with mutual TLS from GenerateCerts.
//   - FederationReceipt and SiloPrivacy are the federation's privacy
//     receipt: the largest silo ε as the headline, every silo's ε, δ, σ and
//     rounds listed.
//   - Server.Report is `fairdp federate`'s report.json in trainer's one
//     results contract (test metrics on the evaluation data, the
//     federation's receipt with every silo's not_covered items, the
//     trainer's warnings, extra.steffle); RoundLog is its metrics.jsonl,
//     appended and synced per round and cut back on resume.
//   - Tune (registered with trainer.RegisterTuner, so trainer.Tune and
//     `fairdp train --algo steffle --tune` run it) is private
//     hyperparameter search in the manner of Papernot and Steinke 2022,
//     Theorem 2, per silo: K complete in-process federations over one
//     fixed split, each silo's noise planned with accounting.PlanTuning so
//     that its whole-search ε is at most the target, each trial scored by
//     the silos' own Gaussian-noised confusion counts, summed; the
//     receipt's headline is the worst silo's search bound.
package federated
