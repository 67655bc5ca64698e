package trainer

import "strings"

// SetStepHook sets the hook Run calls after every step (nil: none) and
// returns a function that restores the previous one; the crash tests of
// checkpointed runs inject their failure with it.
func SetStepHook(h func(epoch, step int) error) (restore func()) {
	prev := stepHook
	stepHook = h
	return func() { stepHook = prev }
}

// CheckpointRandKeys lists what the checkpoint in dir holds of random
// stream state: algorithm state named after a stream, and the sampler's.
func CheckpointRandKeys(t interface{ Fatal(...any) }, dir string) []string {
	ck, err := readCheckpoint(dir)
	if err != nil || ck.head == nil {
		t.Fatal("no checkpoint in ", dir, err)
	}
	var keys []string
	for k := range ck.head.Algo {
		if strings.HasSuffix(k, "noise") {
			keys = append(keys, k)
		}
	}
	if ck.head.SamplerRN != nil || ck.head.Sampler != nil {
		keys = append(keys, "sampler")
	}
	return keys
}

// LoadEvalData is loadEvalData, for the external split-record tests.
var LoadEvalData = loadEvalData

// AlgoNamesOfOtherPackages are the names the loop uses for algorithms it
// cannot import, keyed by the implementing package's constant's name, for
// the test that holds them to those constants.
var AlgoNamesOfOtherPackages = map[string]AlgoName{
	"fermi.Name": algoFermi, "federated.Name": algoSteffle, "dpsgdf.Name": algoDPSGDF, "dpsgdf.NaiveName": algoNaive,
	"linear.ObjPertName": algoObjPert,
}
