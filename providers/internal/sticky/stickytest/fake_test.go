package stickytest

import "testing"

func TestRequestsAndLimits(t *testing.T) {
	var q Requests
	for _, r := range []Request{{Method: "GET", Path: "/repos/a/b/issues/1/comments"}, {Method: "POST", Path: "/repos/a/b/issues/1/comments"},
		{Method: "GET", Path: "/repos/a/b/issues/12/comments"}, {Method: "GET", Path: "/user"}} {
		q.Add(r)
	}
	for _, tc := range []struct {
		method, re string
		want       int
	}{{"GET", `/repos/a/b/issues/\d+/comments`, 2}, {"GET", `/repos/a/b/issues/1/comments`, 1}, {"GET", `/user/?`, 1}, {"GET", `/us`, 0}, {"PATCH", `.*`, 0}} {
		if got := q.Count(tc.method, tc.re); got != tc.want {
			t.Errorf("Count(%s, %s) = %d, want %d", tc.method, tc.re, got, tc.want)
		}
	}
	if len(q.All()) != 4 {
		t.Errorf("All: %d requests", len(q.All()))
	}

	var l Limits
	if l.Take("PUT /x") {
		t.Error("zero Limits limited a request")
	}
	l.Set("PUT /x", 2)
	got := []bool{l.Take("PUT /x"), l.Take("PUT /y"), l.Take("PUT /x"), l.Take("PUT /x")}
	if got[0] != true || got[1] != false || got[2] != true || got[3] != false {
		t.Errorf("Take sequence %v, want [true false true false]", got)
	}
}

func TestStrictJSON(t *testing.T) {
	var v struct {
		Body string `json:"body"`
	}
	for in, ok := range map[string]bool{`{"body":"x"}`: true, `{"body":"x","extra":1}`: false, `{"body":"x"} {}`: false, `{`: false} {
		if err := StrictJSON([]byte(in), &v); (err == nil) != ok {
			t.Errorf("StrictJSON(%s): %v", in, err)
		}
	}
}
