package reflecttest

import (
	"encoding/json"
	"reflect"
	"testing"
)

// Case is a document a decoder under test reads.
type Case struct {
	Name string
	Data []byte
}

// DecodesAsV1 checks that decode reads every case as encoding/json v1
// reads it into a T (check, when set, looks at each result besides), and
// that decode refuses each malformed document v1 refuses.
func DecodesAsV1[T any](t *testing.T, decode func([]byte) (*T, error), cases []Case, malformed []string, check func(t *testing.T, c Case, got *T)) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var want T
			if err := json.Unmarshal(c.Data, &want); err != nil {
				t.Fatalf("v1: %v", err)
			}
			got, err := decode(c.Data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("decoded\n%+v\nv1\n%+v", *got, want)
			}
			if check != nil {
				check(t, c, got)
			}
		})
	}
	for _, bad := range malformed {
		var v1 T
		if json.Unmarshal([]byte(bad), &v1) == nil {
			t.Fatalf("v1 accepted %s", bad)
		}
		if _, err := decode([]byte(bad)); err == nil {
			t.Fatalf("accepted %s", bad)
		}
	}
}
