package loaders

// Dataset is a labelled data set with a sensitive group per record.
//
// Exactly one of the two input forms is set:
//   - tabular: X holds N×D float64 features, row-major (D = Dim);
//   - images: Pix holds N×C×H×W bytes (0–255) as decoded and resized once;
//     FillFloat32/FillFloat64 scale them to [0,1] or standardise them on the
//     fly, so a 23k-image set is decoded once, not once per epoch.
//
// Labels are 0..len(LabelNames)-1, Groups are 0..len(GroupNames)-1. Row[i]
// says where record i came from (the 1-based data line in its file, or the
// index in an IDX file, or the position of an image in its sorted folder), and
// Sources[SourceOf[i]] names that file, so every number in a report can be
// traced back to records.
type Dataset struct {
	Name string

	// Tabular form.
	X            []float64
	Dim          int
	FeatureNames []string

	// Image form.
	Pix         []uint8
	C, H, W     int
	Standardise bool      // if true, pixels become (p/255 - Mean[c]) / Std[c]
	Mean, Std   []float64 // per channel, fixed on the training split

	Labels     []int
	Targets    []float64 // regression targets (nil for classification)
	LabelNames []string
	Groups     []int
	GroupNames []string

	Row      []int
	SourceOf []int
	Sources  []string

	// Notes say what loading did besides decoding (rows dropped for missing
	// cells, unseen categories, how the split was made), for reports.
	Notes []string
	// NotesCountRecords is set when Notes hold exact counts over records
	// that include this set's own (rows dropped for a missing cell or by a
	// filter before the split, cells imputed in this set): a private run
	// that shows the notes declares them outside its guarantee.
	NotesCountRecords bool
}
