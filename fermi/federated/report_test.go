package federated

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestFederationReportWarnings, for `fairdp federate`:
// its report carries the same warnings as `fairdp train`'s. A server model
// that predicts class 1 for every test record (zero weights, a large bias)
// on a test split where class 1 is the minority gets both the
// worse-than-majority and the one-class warning; before, the federation's
// report had no warnings at all.
func TestFederationReportWarnings(t *testing.T) {
	cfg := testConfig(31)
	job := testJob(t, cfg, synthetic(600, 3))
	ones := 0
	for _, y := range job.Test.Labels {
		ones += y
	}
	if 2*ones >= job.Test.N() {
		t.Fatalf("class 1 holds %d of %d test records; the test needs it to be the minority", ones, job.Test.N())
	}
	var local []Client
	for _, s := range buildSilos(t, cfg, job.Train) {
		local = append(local, Local(s))
	}
	srv, err := NewServer[float64](context.Background(), serverConfig(cfg), local)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range srv.Model.Params() {
		for i := range p.Value {
			p.Value[i] = 0
			if len(p.Value) == 1 { // the logistic model's bias
				p.Value[i] = 10
			}
		}
	}
	receipt, silos, err := srv.Privacy(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := srv.Report(job, []string{"a", "b", "c"}, receipt, silos, 1)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(rep.Warnings, "\n")
	for _, want := range []string{"worse than always predicting the most frequent class", "predicts class 1 for 100.0% of the test records"} {
		if !strings.Contains(all, want) {
			t.Errorf("federation report warnings %q lack %q", rep.Warnings, want)
		}
	}
}

// TestFederationReceiptListsPublicGroupSizes, for
// `fairdp federate`: silos that take their exact group sizes as public
// (Fair.PublicGroupSizes, --public-group-sizes) release them without noise;
// the federation's receipt lists them under not_covered with the silos
// they apply to (before, only a note of the headline silo said so), and
// silos that noised their counts add no such item.
func TestFederationReceiptListsPublicGroupSizes(t *testing.T) {
	for _, public := range []bool{false, true} {
		cfg := testConfig(32)
		cfg.Fair.PublicGroupSizes = public
		var local []Client
		silos := buildSilos(t, cfg, synthetic(600, 4))
		for _, s := range silos {
			local = append(local, Local(s))
		}
		srv, err := NewServer[float64](context.Background(), serverConfig(cfg), local)
		if err != nil {
			t.Fatal(err)
		}
		receipt, _, err := srv.Privacy(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var items []string
		detail := ""
		for _, n := range receipt.NotCovered {
			items = append(items, n.Item)
			if n.Item == "group_sizes" {
				detail = n.Detail
			}
		}
		if got := detail != ""; got != public {
			t.Errorf("public group sizes %v: not_covered %v", public, items)
			continue
		}
		for i := range silos {
			if public && !strings.Contains(detail, fmt.Sprintf("%d (in-process silo %d)", i, i)) {
				t.Errorf("group_sizes %q does not name silo %d", detail, i)
			}
		}
	}
}
