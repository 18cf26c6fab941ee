package workflows

import (
	"strings"
	"testing"
)

// TestReportReview: report.review is true, false or a mapping of options
// with defaults; wrong values are problems with a position.
func TestReportReview(t *testing.T) {
	const on = "name: r\non: [{event: pull_request}]\n"
	for _, tc := range []struct {
		src  string
		want *ReviewOptions
	}{
		{"", nil},
		{"report: {review: false}", nil},
		{"report: {review: true}", &ReviewOptions{Filter: ReviewFilterAdded, MaxComments: 30}},
		{"report: {review: {}}", &ReviewOptions{Filter: ReviewFilterAdded, MaxComments: 30}},
		{"report: {review: {filter: diff_context, max_comments: 5}}", &ReviewOptions{Filter: ReviewFilterDiffContext, MaxComments: 5}},
		{"report: {review: {filter: none}}", &ReviewOptions{Filter: ReviewFilterNone, MaxComments: 30}},
	} {
		w := mustParse(t, on+tc.src)
		got := w.Report.Review
		if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
			t.Errorf("%q: review %+v, want %+v", tc.src, got, tc.want)
		}
	}
	for src, want := range map[string]string{
		"report:\n  review:\n    filter: lines":   "test.yaml:5:13: report.review.filter",
		"report:\n  review:\n    max_comments: 0": "test.yaml:5:19: report.review.max_comments",
		"report:\n  review:\n    nope: 1":         `test.yaml:5:5: unknown field "nope" in report.review`,
		"report:\n  review: yes please":           "test.yaml:4:11: report.review: expected true, false or a mapping",
	} {
		_, err := Parse("test.yaml", []byte(on+src+"\nsteps:\n  - id: s\n    run: echo s\n"))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: got %v, want %q", src, err, want)
		}
	}
}

// TestReviewSchema: the JSON schema has report.review as a boolean or the
// closed mapping of filter and max_comments.
func TestReviewSchema(t *testing.T) {
	s := string(Schema())
	for _, want := range []string{`"review"`, `"max_comments"`, `"diff_context"`} {
		if !strings.Contains(s, want) {
			t.Errorf("schema lacks %s", want)
		}
	}
}
