// Package loaders turns data files into Datasets: features or images, a label,
// and a sensitive group for every record.
//
// Fair and private training needs more than a feature matrix: every record
// must carry its sensitive group, preprocessing must be fitted on the training
// split only (a z-score or a category list computed on the test split leaks
// it), and every number in a report must be traceable to the line of the file
// it came from. So tabular data goes through three explicit steps:
//
//   - ReadCSV reads a delimited file into a Table of raw cells, surviving what
//     real files contain (quotes, CRLF, a UTF-8 BOM, "?" for missing, comment
//     lines) and naming file, line and column in every error;
//   - a Schema (JSON, or one of the Builtin ones for adult, communities,
//     credit, parkinsons and dutch, or one a package registered with
//     RegisterBuiltin) says which column is the label, which are
//     sensitive, numeric, categorical or dropped, and what to do with missing
//     cells and unseen categories;
//   - a Preprocessor is Fit on the training rows and Applied to any rows; its
//     fitted state is JSON so it travels inside checkpoints.
//
// Where each built-in's encoding comes from is in its schema function's
// comment (communitiesSchema: Kearns et al. 2018's GerryFair preprocessing
// of Communities and Crime, with the binary group of Jagielski et al.'s
// reference code, each choice cited there).
//
// LoadCSV and LoadBuiltin run the three steps with a seeded split. The Adult
// files are embedded (gzip) so that `fairdp train` works on a machine without
// the shared data directory. Split, Subset, Batches and the Dataset methods
// (counts per group and label, FillFloat32/FillFloat64 for model inputs)
// serve every data set, tabular or image; Describe summarises one. Load is
// the one dispatch from a data set's name (a built-in table, an image set,
// or a CSV file with its schema) to its loader, with the split, the limit
// and a model's fitted preprocessing: the training loop, the pipelines and
// the command all read data through it, so a name means the same data
// everywhere. Its errors name the LoadOptions field at fault (OptionError),
// which carry the names of trainer.Config's fields.
//
// # Schema reference
//
// A schema is a JSON object; unknown keys are errors. Every column of the
// file must get a role (label, target, sensitive, numeric, categorical or
// drop) unless drop_rest is set, so that a renamed or added column is
// noticed instead of silently ignored.
//
//	name                  data set name in reports (default "csv")
//	files, test_files     data files, relative to the schema file; with
//	                      test_files there is no random split. Used when
//	                      `fairdp train --schema S` is given without --dataset;
//	                      --dataset FILE replaces files (test_files are then
//	                      used only if FILE is one of files)
//	train_frac            training fraction of a random split (default 0.75)
//	format.delimiter      one character (default ",")
//	format.header         the first line names the columns (default false)
//	format.columns        column names of a file without a header
//	                      (default column1, column2, …; an empty header cell
//	                      is also named column<k>)
//	format.skip_lines     lines skipped at the start (default 0)
//	format.comment        one character starting lines to skip (default none)
//	format.keep_space     keep spaces around fields (default false: trimmed)
//	format.missing        cell values meaning missing (default "" and "?")
//	label.column          the class label column (required unless target)
//	label.positive        values of label 1 (binary); numbers match by value,
//	                      so "1" matches "1.0"
//	label.negative        values of label 0; any other value is then an error
//	                      (default: every value not positive)
//	label.classes         class values of a multi-class label
//	label.threshold       label 1 when the numeric value is > threshold
//	label.names           display names of the labels
//	target                a numeric regression target (tailoring, dpnose);
//	                      the SGD-family algorithms need a label
//	sensitive.columns     the sensitive column(s); several combine as "A|B"
//	sensitive.map         raw value → group name, per column
//	sensitive.buckets     numeric edges cutting a column into groups
//	sensitive.groups      group names in id order (default: sorted)
//	sensitive_as_feature  also feed the sensitive columns to the model
//	                      (default false)
//	numeric               columns scaled with training statistics (scale)
//	scale                 "zscore" (default: training mean and sd) or
//	                      "minmax" (training min → 0, max → 1)
//	categorical           columns one-hot encoded
//	categories            column → its category list (default: the values
//	                      seen in the training rows)
//	recode                column → {raw value: new value}, applied first
//	drop                  columns to ignore; "" drops every unnamed column
//	                      (a spreadsheet or pandas index)
//	drop_rest             drop every column without a role (default false)
//	rename                column name or "#N" (1-based position) → new name,
//	                      applied before everything else; how one of two
//	                      columns with the same header name is told apart
//	filter                column → values: keep only rows whose value is
//	                      listed (numbers match by value); the rest are
//	                      dropped before the split and counted in the notes
//	on_missing            "drop-row" (default), "error", "impute-mean",
//	                      "impute-mode"
//	on_unseen             a test category not seen in training: "error"
//	                      (default) or "zero" (all-zero one-hot, counted)
//
// Example (a wide export with an index column and a repeated header):
//
//	{
//	  "format": {"header": true},
//	  "rename": {"#7": "income_2"},
//	  "label": {"column": "default", "positive": ["1"]},
//	  "sensitive": {"columns": ["sex"], "map": {"sex": {"1": "Male", "2": "Female"}}},
//	  "numeric": ["age", "income", "income_2"],
//	  "categorical": ["education"],
//	  "filter": {"country": ["US"]},
//	  "drop": [""],
//	  "drop_rest": true,
//	  "on_unseen": "zero"
//	}
//
// The preprocessing fitted on the training rows (means, sds, category
// lists) is not private: receipts list it under not_covered.
package loaders
