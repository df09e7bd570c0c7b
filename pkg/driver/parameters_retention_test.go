package driver

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/retention"
)

// TestParseRetentionParams: a backup class's keep* parameters make the
// policy pkg/retention applies; a bad value, or a rule on a class without
// backup "true", is InvalidArgument naming the parameter; all-zero counts
// are no policy.
func TestParseRetentionParams(t *testing.T) {
	backup := func(kv ...string) map[string]string {
		m := map[string]string{"backup": "true"}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		params map[string]string
		want   *retention.Policy
		bad    string // the parameter the error names
	}{
		{backup(), nil, ""},
		{backup("keepLast", "0"), nil, ""},
		{backup("keepLast", "3", "keepDaily", "7", "keepWeekly", "-1"), &retention.Policy{Last: 3, Daily: 7, Weekly: -1}, ""},
		{backup("keepHourly", "24", "keepMonthly", "12", "keepYearly", "2", "keepWithin", "2d"),
			&retention.Policy{Hourly: 24, Monthly: 12, Yearly: 2, Within: 48 * time.Hour}, ""},
		{backup("keepWithin", "36h"), &retention.Policy{Within: 36 * time.Hour}, ""},
		{backup("keepLast", "three"), nil, "keepLast"},
		{backup("keepDaily", "-2"), nil, "keepDaily"},
		{backup("keepWithin", "-1h"), nil, "keepWithin"},
		{backup("keepWithin", "soon"), nil, "keepWithin"},
		{map[string]string{"keepLast": "3"}, nil, "keepLast"},
		{map[string]string{"backup": "false", "keepDaily": "3"}, nil, "keepDaily"},
	} {
		p, err := parseSnapshotParams(tc.params)
		if tc.bad != "" {
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.bad) {
				t.Errorf("%v: %v; want InvalidArgument naming %s", tc.params, err, tc.bad)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.params, err)
			continue
		}
		if (p.Retention == nil) != (tc.want == nil) || p.Retention != nil && *p.Retention != *tc.want {
			t.Errorf("%v: policy %+v, want %+v", tc.params, p.Retention, tc.want)
		}
	}
}
