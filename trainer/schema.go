package trainer

import _ "embed"

// ReportSchema is the JSON Schema (draft 2020-12) of report.json, the one
// results contract every algorithm and entry point writes (Report). Tests
// validate every algorithm's report.json against it; outside tools can
// read it with `go doc` or from trainer/report.schema.json.
//
//go:embed report.schema.json
var ReportSchema []byte
